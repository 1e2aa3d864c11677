#pragma once
/// @file run_checkpoint.hpp
/// Finding a run's checkpoint from a path that names either the file or the run's directory.
#include <string>

namespace nnvmc {

struct Checkpoint;

/// The checkpoint of a run named by `path`: the file itself, or a run's output directory's
/// checkpoint.h5. `what` starts the error messages ("--resume", "eval", "'model.init_from':").
/// @throws CheckpointError when there is none — naming the runs below `path` when it holds only
/// those, or saying why a run there has no checkpoint (set aside by --force, or unfinished);
/// InputError when the run there is in use and has not written its first checkpoint yet.
std::string run_checkpoint(const std::string& what, const std::string& path);

/// The checkpoint a run wrote before its latest, kept beside it (the trainer links it there before
/// each new checkpoint replaces the old): a latest one damaged on disk loses one interval, not
/// the run.
inline constexpr const char* kOlderCheckpointName = "checkpoint.h5.1";

/// `checkpoint` when it can be read; when it cannot and it is a run's checkpoint.h5, the older
/// one beside it if that can be read, with a warning naming both and the older one's iteration.
/// `what` starts the warning. The checkpoint read goes to `loaded` when given (the caller need
/// not read it again). @throws CheckpointError of `checkpoint` when neither can be read.
std::string readable_checkpoint(const std::string& what, const std::string& checkpoint, Checkpoint* loaded = nullptr);

/// Collective: throws InputError on every rank when the ranks of an MPI run read different
/// checkpoints (`c`, as load_checkpoint read it), e.g. per-node copies of a run's directory
/// from different iterations: a resume then hung at the first collective past the shorter
/// run's end, and copies of one iteration with other parameters trained (or evaluated) a mix
/// of two wavefunctions to exit 0 (a user audit). `what` starts the message ("--resume DIR").
void require_same_checkpoint_on_all_ranks(const Checkpoint& c, const std::string& what);

}  // namespace nnvmc
