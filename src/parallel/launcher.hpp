#pragma once
/// @file launcher.hpp
/// What the process launcher (mpirun, mpiexec, srun) says about this process, read from the
/// variables it leaves: Open MPI (OMPI_COMM_WORLD_SIZE), MPICH/Hydra (PMI_SIZE), PMIx
/// (PMIX_RANK) and Slurm (SLURM_STEP_NUM_TASKS). Torch- and MPI-free. With MPI, init_world()
/// initialises it when a launcher started the process; without, init_world() throws an
/// InputError when the launcher started several processes (each would run the whole job).

#include <string>

namespace nnvmc::parallel {

/// Whether a launcher started this process (one of its variables is set).
bool launched_by_launcher();

/// How many processes the launcher started together with this one (its world size), or 1 when
/// none or it does not say (a PMIx-only launch gives its rank, not the size).
int launcher_world_size();

/// What a command this run tells the user to run (a resume hint) needs in front of `nnvmc` to
/// run as this one does: "" for one process, else "srun -n K " under Slurm or "mpirun -np K ".
std::string launch_prefix(int ranks);

}  // namespace nnvmc::parallel
