#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>

#include <filesystem>
#include <fstream>

#include "common/test_util.hpp"
#include "core/errors.hpp"
#include "io/hdf5_file.hpp"
#include "io/output_kind.hpp"
#include "models/ferminet/ferminet.hpp"
#include "train/checkpoint.hpp"

using namespace nnvmc;
namespace fs = std::filesystem;

namespace {
Checkpoint sample_checkpoint() {
  torch::manual_seed(3);
  Checkpoint c;
  c.iteration = 17;
  c.trained_seconds = 12.625;
  c.config_yaml = "optim: {iterations: 5}\n";
  c.parameters["layer0.one.weight"] = torch::randn({4, 3}, torch::kFloat64);
  c.parameters["envelope_pi0"] = torch::randn({2}, torch::kFloat32);
  c.optimizer["adam/exp_avg/layer0.one.weight"] = torch::randn({4, 3}, torch::kFloat64);
  for (const char* name : {"lih", "h2"}) {  // a run of two molecules with their own walkers
    MoleculeCheckpoint m;
    m.system = load_molecule(name, test::molecules_dir());
    m.sampler.r = torch::randn({8, m.system.n_electrons(), 3}, torch::kFloat64);
    m.sampler.logabs = torch::randn({8}, torch::kFloat64);
    m.sampler.step_size = c.molecules.empty() ? 0.123456789 : 0.25;
    m.sampler.rng_state = at::detail::getDefaultCPUGenerator().get_state();
    c.molecules.push_back(std::move(m));
  }
  c.molecules[1].laplacian_rng = at::detail::getDefaultCPUGenerator().get_state();
  return c;
}
std::string tmp(const std::string& name) { return (fs::temp_directory_path() / name).string(); }
}  // namespace

TEST(Checkpoint, RoundTripIsBitIdentical) {
  const auto c = sample_checkpoint();
  const auto path = tmp("nnvmc_ckpt_roundtrip.h5");
  save_checkpoint(path, c);
  const auto d = load_checkpoint(path);
  EXPECT_EQ(d.iteration, c.iteration);
  EXPECT_EQ(d.trained_seconds, c.trained_seconds);  // optim.minutes counts it over resumes
  EXPECT_EQ(d.config_yaml, c.config_yaml);
  ASSERT_EQ(d.parameters.size(), c.parameters.size());
  for (const auto& [k, v] : c.parameters) {
    EXPECT_EQ(d.parameters.at(k).scalar_type(), v.scalar_type()) << k;
    EXPECT_TRUE(torch::equal(d.parameters.at(k), v)) << k;
  }
  EXPECT_TRUE(torch::equal(d.optimizer.at("adam/exp_avg/layer0.one.weight"),
                           c.optimizer.at("adam/exp_avg/layer0.one.weight")));
  ASSERT_EQ(d.molecules.size(), c.molecules.size());
  for (size_t m = 0; m < c.molecules.size(); ++m) {
    const auto &a = c.molecules[m], &b = d.molecules[m];
    EXPECT_EQ(b.system.name, a.system.name);
    EXPECT_TRUE(torch::equal(b.sampler.r, a.sampler.r));
    EXPECT_TRUE(torch::equal(b.sampler.logabs, a.sampler.logabs));
    EXPECT_EQ(b.sampler.step_size, a.sampler.step_size);
    EXPECT_TRUE(torch::equal(b.sampler.rng_state, a.sampler.rng_state));
    EXPECT_EQ(b.laplacian_rng.defined(), a.laplacian_rng.defined());
    ASSERT_EQ(b.system.atoms.size(), a.system.atoms.size());
    for (size_t i = 0; i < a.system.atoms.size(); ++i) {
      EXPECT_EQ(b.system.atoms[i].Z, a.system.atoms[i].Z);
      EXPECT_EQ(b.system.atoms[i].position, a.system.atoms[i].position);
    }
    EXPECT_EQ(b.system.charge, a.system.charge);
    EXPECT_EQ(b.system.spin, a.system.spin);
    // the molecule file's reference travels with its molecule (a moved run lost it, a user audit)
    ASSERT_TRUE(a.system.e_ref.has_value());
    ASSERT_TRUE(b.system.e_ref.has_value());
    EXPECT_EQ(*b.system.e_ref, *a.system.e_ref);
    EXPECT_EQ(b.system.e_ref_source, a.system.e_ref_source);
    EXPECT_FALSE(b.system.e_ref_source.empty());
  }
  EXPECT_TRUE(torch::equal(d.molecules[1].laplacian_rng, c.molecules[1].laplacian_rng));
  EXPECT_TRUE(d.history.empty());
  fs::remove(path);
}

// The resume history (what each resume changed) is stored and checksummed with the rest: an
// altered history is a damaged file, as an altered config is.
TEST(Checkpoint, TheResumeHistoryIsStoredAndGuardedByTheChecksum) {
  auto c = sample_checkpoint();
  c.history = R"([{"iteration":4,"changes":"optim.lr 0.05 -> 0.002"}])";
  const auto path = tmp("nnvmc_ckpt_history.h5");
  save_checkpoint(path, c);
  EXPECT_EQ(load_checkpoint(path).history, c.history);
  {
    nnvmc::io::H5File f(path, nnvmc::io::H5File::Mode::append);
    f.set_attr("history", R"([{"iteration":4,"changes":"none"}])");
  }
  EXPECT_THROW(load_checkpoint(path), CheckpointError);
  // a version-4 file (no history; its checksum covers the same text) is still read
  c.history.clear();
  save_checkpoint(path, c);
  {
    nnvmc::io::H5File f(path, nnvmc::io::H5File::Mode::append);
    f.set_attr("version", "4");
  }
  EXPECT_TRUE(load_checkpoint(path).history.empty());
  fs::remove(path);
}

namespace {
/// A checkpoint of one molecule in format version 2 (no checksum), with `iteration` and the
/// walkers at `positions`.
void write_version_two(const std::string& path, const Checkpoint& c, std::int64_t iteration,
                       const torch::Tensor& positions) {
  io::H5File f(path, io::H5File::Mode::truncate);
  f.set_attr("format", "nnvmc-checkpoint");
  f.set_attr("version", "2");
  f.set_attr("config", c.config_yaml);
  f.set_attr("system_name", "lih");
  const auto put = [&](const std::string& name, const torch::Tensor& t) {
    const auto x = t.contiguous();
    const io::DType d = x.scalar_type() == torch::kFloat64 ? io::DType::f64
                        : x.scalar_type() == torch::kInt64 ? io::DType::i64 : io::DType::u8;
    f.write(name, io::make_array(d, x.sizes().vec(), x.data_ptr()));
  };
  const auto& m = c.molecules[0];
  put("iteration", torch::tensor(iteration));
  put("parameters/w", c.parameters.at("layer0.one.weight"));
  put("system/atomic_numbers", torch::tensor({int64_t{3}, int64_t{1}}));
  put("system/positions", torch::tensor({0.0, 0.0, 0.0, 0.0, 0.0, 3.015}, torch::kFloat64).view({2, 3}));
  put("system/charge_spin", torch::tensor({int64_t{0}, int64_t{0}}));
  put("sampler/positions", positions);
  put("sampler/logabs", m.sampler.logabs);
  put("sampler/step_size", torch::tensor(m.sampler.step_size, torch::kFloat64));
  put("sampler/rng_state", m.sampler.rng_state);
}

std::string load_error(const std::string& path) {
  try {
    (void)load_checkpoint(path);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "(loaded)";
}
}  // namespace

// Checkpoints of one molecule written before runs held lists (format version 2: system/,
// sampler/ and laplacian/rng_state without an index) are read as a list of one.
TEST(Checkpoint, VersionTwoFilesAreReadAsOneMolecule) {
  const auto c = sample_checkpoint();
  const auto path = tmp("nnvmc_ckpt_v2.h5");
  write_version_two(path, c, 5, c.molecules[0].sampler.r);
  const auto d = load_checkpoint(path);
  EXPECT_EQ(d.iteration, 5);
  ASSERT_EQ(d.molecules.size(), 1u);
  EXPECT_EQ(d.molecules[0].system.name, "lih");
  EXPECT_EQ(d.molecules[0].system.n_electrons(), 4);
  EXPECT_TRUE(torch::equal(d.molecules[0].sampler.r, c.molecules[0].sampler.r));
  EXPECT_EQ(d.molecules[0].sampler.step_size, c.molecules[0].sampler.step_size);
  EXPECT_TRUE(torch::equal(d.parameters.at("w"), c.parameters.at("layer0.one.weight")));
  fs::remove(path);
}

// What no checksum guards (a version-2 file) is checked for what nnvmc never writes: an
// iteration beyond any optim.iterations (it padded result.h5 with that many NaN rows, or failed
// in std::vector) and NaN walkers (eval printed an energy). A FIFO is refused, not waited on.
TEST(Checkpoint, ContentsNnvmcNeverWritesAreRefusedEvenWithoutAChecksum) {
  const auto c = sample_checkpoint();
  const auto path = tmp("nnvmc_ckpt_v2_damaged.h5");
  write_version_two(path, c, std::int64_t{1} << 62, c.molecules[0].sampler.r);
  EXPECT_NE(load_error(path).find("iteration 4611686018427387904 out of range"), std::string::npos) << load_error(path);
  auto r = c.molecules[0].sampler.r.clone();
  r[0][0][0] = std::nan("");
  write_version_two(path, c, 5, r);
  EXPECT_NE(load_error(path).find("non-finite walker positions"), std::string::npos) << load_error(path);
  fs::remove(path);
  const auto fifo = tmp("nnvmc_ckpt_fifo.h5");
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(load_error(fifo).find("not a regular file"), std::string::npos) << load_error(fifo);
  fs::remove(fifo);
}

TEST(Checkpoint, ParametersCarryNoGeometry) {
  // The model state holds parameters only: a FermiNet has no nuclei buffer, so nothing in a
  // checkpoint's parameters can pin the network to the geometry it was trained at.
  const System s = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), s);
  EXPECT_TRUE(net.named_buffers().is_empty());
  for (const auto& [name, t] : module_state(net)) EXPECT_EQ(name.find("nucle"), std::string::npos) << name;
}

TEST(Checkpoint, SameAtomsAtAnotherGeometryAreAcceptedOtherAtomsRefused) {
  const System lih = load_molecule("lih", test::molecules_dir());
  FermiNet net(test::small_ferminet(), lih);
  EXPECT_TRUE(check_checkpoint_system(lih, lih, net));
  System stretched = lih;
  stretched.atoms[1].position[2] += 0.5;
  EXPECT_FALSE(check_checkpoint_system(lih, stretched, net));  // allowed: a new geometry
  System swapped = lih;                                        // H first, then Li: same counts
  std::swap(swapped.atoms[0], swapped.atoms[1]);
  EXPECT_THROW(check_checkpoint_system(lih, swapped, net), InputError);
  const System h2 = load_molecule("h2", test::molecules_dir());
  try {
    check_checkpoint_system(lih, h2, net);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("system.molecule"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, NonFiniteValuesAreRefusedAndTheOldFileIsKept) {
  const auto path = tmp("nnvmc_ckpt_nan.h5");
  auto c = sample_checkpoint();
  save_checkpoint(path, c);
  c.parameters["layer0.one.weight"][0][0] = std::nan("");
  c.iteration = 99;
  EXPECT_THROW(save_checkpoint(path, c), NumericalError);
  EXPECT_EQ(load_checkpoint(path).iteration, 17);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  fs::remove(path);
}

TEST(Checkpoint, CorruptOrMissingFilesGiveCheckpointErrors) {
  const auto path = tmp("nnvmc_ckpt_corrupt.h5");
  std::ofstream(path) << "this is not HDF5";
  EXPECT_THROW(load_checkpoint(path), CheckpointError);
  EXPECT_THROW(load_checkpoint(tmp("nnvmc_no_such_file.h5")), CheckpointError);
  // Truncated copy of a real checkpoint.
  save_checkpoint(path, sample_checkpoint());
  const auto size = fs::file_size(path);
  fs::resize_file(path, size / 2);
  EXPECT_THROW(load_checkpoint(path), CheckpointError);
  fs::remove(path);
}

TEST(Checkpoint, WrongFormatVersionIsRejected) {
  const auto path = tmp("nnvmc_ckpt_version.h5");
  save_checkpoint(path, sample_checkpoint());
  {
    io::H5File f(path, io::H5File::Mode::append);
    f.set_attr("version", "999");
  }
  try {
    load_checkpoint(path);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("version 999"), std::string::npos) << e.what();
  }
  fs::remove(path);
}

// A checkpoint written by another model (model.type or its settings changed on --resume or
// eval) is refused naming a parameter the model lacks, instead of loading the overlap and then
// overwriting the trained wavefunction with a different one.
TEST(Checkpoint, ParametersTheModelDoesNotHaveAreRefusedNamingOne) {
  torch::nn::Module model;
  model.register_parameter("kept", torch::zeros({2}, torch::kFloat64));
  TensorMap state{{"kept", torch::ones({2}, torch::kFloat64)}};
  load_module_state(model, state);  // the same parameters: loaded
  EXPECT_TRUE(torch::equal(model.named_parameters()["kept"], torch::ones({2}, torch::kFloat64)));
  state["layer9.weight"] = torch::ones({3}, torch::kFloat64);
  try {
    load_module_state(model, state);
    FAIL() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("'layer9.weight'"), std::string::npos) << e.what();
  }
  // parameters an earlier Orbformer registered without using them are always left out
  state.erase("layer9.weight");
  state["electrons.edge_scale0"] = torch::ones({4, 1}, torch::kFloat64);  // as the Orbformer names them
  load_module_state(model, state);
}

// A config longer than HDF5's 64 KiB limit for compact attributes (a run over hundreds of
// molecules; a profile's JSON) is stored and read back (found by a session: `nnvmc profile
// --iterations 2000` lost its report to "cannot write attribute").
TEST(Checkpoint, AConfigLongerThanSixtyFourKibibytesIsStoredAndReadBack) {
  auto c = sample_checkpoint();
  c.config_yaml.clear();
  for (int i = 0; c.config_yaml.size() < 300000; ++i) c.config_yaml += "# molecule " + std::to_string(i) + "\n";
  const auto path = tmp("nnvmc_ckpt_long_config.h5");
  save_checkpoint(path, c);
  EXPECT_EQ(load_checkpoint(path).config_yaml, c.config_yaml);
  {
    io::H5File f(tmp("nnvmc_long_attribute.h5"), io::H5File::Mode::truncate);
    f.set_attr("profile_json", c.config_yaml);
  }
  EXPECT_EQ(io::H5File(tmp("nnvmc_long_attribute.h5"), io::H5File::Mode::read).attr("profile_json"), c.config_yaml);
  fs::remove(path);
  fs::remove(tmp("nnvmc_long_attribute.h5"));
}

// Files are written through checked system calls: a failing write is a WriteError naming the
// reason (a full disk used to leave a corrupt checkpoint in place of the good one), and the
// file being replaced stays as it was.
TEST(Checkpoint, AFailedWriteIsAWriteErrorAndKeepsTheOldFile) {
  const auto path = tmp("nnvmc_ckpt_keep.h5");
  save_checkpoint(path, sample_checkpoint());
  const auto before = fs::file_size(path);
  fs::remove_all(path + ".tmp");
  fs::create_directory(path + ".tmp");  // the temporary cannot be created
  Checkpoint changed = sample_checkpoint();
  changed.iteration = 99;
  EXPECT_THROW(save_checkpoint(path, changed), WriteError);
  fs::remove_all(path + ".tmp");
  EXPECT_EQ(fs::file_size(path), before);
  EXPECT_EQ(load_checkpoint(path).iteration, 17);
  try {  // what a full disk answers
    io::write_file_synced("/dev/full", "x", 1);
    FAIL() << "expected WriteError";
  } catch (const WriteError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
}

// An HDF5 file that cannot be created for want of room (a full disk; here the file-size limit,
// which fails the same write) is a WriteError with the OS's reason: it was "cannot open HDF5 file",
// an input error (exit 2), in a user audit on a full tmpfs.
TEST(Checkpoint, AnHdf5FileThatCannotBeWrittenIsAWriteErrorWithTheReason) {
  const auto path = tmp("nnvmc_h5_no_room.h5");
  fs::remove(path);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  rlimit tiny = before;
  tiny.rlim_cur = 16;  // below the superblock's first write
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tiny), 0);
  std::string what = "no error";
  bool write_error = false;
  try {
    io::H5File f(path, io::H5File::Mode::truncate);
  } catch (const WriteError& e) {
    write_error = true;
    what = e.what();
  } catch (const std::exception& e) {
    what = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  fs::remove(path);
  EXPECT_TRUE(write_error) << what;
  EXPECT_NE(what.find("cannot create HDF5 file: File too large"), std::string::npos) << what;
}

// train and compare refuse each other's directories by the files they write together; a user's
// own folder holding one such name (a result.h5, a folder called cells) is neither.
TEST(OutputKind, RunsAndComparisonsAreKnownByTheFilesTheyWriteTogether) {
  namespace fs = std::filesystem;
  const auto dir = (fs::temp_directory_path() / "nnvmc_output_kind").string();
  fs::remove_all(dir);
  fs::create_directories(dir + "/cells/notes");
  for (const char* f : {"result.h5", "summary.json", "references.json"}) std::ofstream(dir + "/" + f) << "x";
  EXPECT_EQ(io::training_run_marker(dir), "");
  EXPECT_EQ(io::comparison_marker(dir), "");
  fs::create_directories(dir + "/alone");
  std::ofstream(dir + "/alone/config.yaml") << "x";
  EXPECT_EQ(io::training_run_marker(dir + "/alone"), "");
  std::ofstream(dir + "/alone/checkpoint.h5") << "x";
  EXPECT_EQ(io::training_run_marker(dir + "/alone"), "checkpoint.h5");
  std::ofstream(dir + "/config.yaml") << "x";
  EXPECT_EQ(io::training_run_marker(dir), "config.yaml and summary.json");
  std::ofstream(dir + "/checkpoint.h5.previous") << "x";  // a run set aside by --force
  EXPECT_EQ(io::training_run_marker(dir), "checkpoint.h5.previous");
  std::ofstream(dir + "/cells/notes/cell.yaml") << "x";
  EXPECT_EQ(io::comparison_marker(dir), "cells/notes/cell.yaml");
  std::ofstream(dir + "/compare.h5") << "x";
  EXPECT_EQ(io::comparison_marker(dir), "compare.h5");
  EXPECT_EQ(io::training_run_marker(dir + "/missing"), "");
  EXPECT_EQ(io::comparison_marker(dir + "/missing"), "");
  // the user's own files named as a run's: config.yaml without the run's mark, result.h5 without a run id
  EXPECT_EQ(io::foreign_run_files(dir), (std::vector<std::string>{"config.yaml", "result.h5"}));
  std::ofstream(dir + "/config.yaml") << io::kRunConfigHeader << "\nsystem: {}\n";
  EXPECT_EQ(io::foreign_run_files(dir), std::vector<std::string>{"result.h5"});
  fs::remove(dir + "/result.h5");
  EXPECT_TRUE(io::foreign_run_files(dir).empty());
  fs::remove_all(dir);
}
