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

}  // namespace nnvmc
