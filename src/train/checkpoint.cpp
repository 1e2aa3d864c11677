#include "train/checkpoint.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "core/elements.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "io/hdf5_file.hpp"
#include "parallel/walker_random.hpp"

namespace nnvmc {
namespace {

io::Array to_array(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU).contiguous();
  io::DType d;
  switch (c.scalar_type()) {
    case torch::kFloat64: d = io::DType::f64; break;
    case torch::kFloat32: d = io::DType::f32; break;
    case torch::kInt64: d = io::DType::i64; break;
    case torch::kUInt8: d = io::DType::u8; break;
    default: throw Error("cannot store tensor of dtype " + std::string(c.dtype().name()));
  }
  return io::make_array(d, c.sizes().vec(), c.data_ptr());
}

torch::Tensor from_array(const io::Array& a) {
  torch::Dtype d = torch::kFloat64;
  switch (a.dtype) {
    case io::DType::f64: d = torch::kFloat64; break;
    case io::DType::f32: d = torch::kFloat32; break;
    case io::DType::i64: d = torch::kInt64; break;
    case io::DType::u8: d = torch::kUInt8; break;
  }
  auto t = torch::empty(a.shape, d);
  if (!a.bytes.empty()) std::memcpy(t.data_ptr(), a.bytes.data(), a.bytes.size());
  return t;
}

void check_finite(const std::string& name, const torch::Tensor& t) {
  if (t.is_floating_point() && !torch::isfinite(t).all().item<bool>())
    throw NumericalError("refusing to checkpoint non-finite values in '" + name + "'");
}

/// FNV-1a (64 bit) over every dataset's name, type, shape and bytes in name order, and the
/// config: a checkpoint whose bytes were damaged is refused instead of loading wrong numbers.
class Checksum {
 public:
  void add(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
  }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }
  void add(const std::string& name, const io::Array& a) {
    add(name);
    const int dtype = static_cast<int>(a.dtype);
    add(&dtype, sizeof dtype);
    add(a.shape.data(), a.shape.size() * sizeof(std::int64_t));
    add(a.bytes.data(), a.bytes.size());
  }
  std::string hex() const { return strfmt("%016llx", static_cast<unsigned long long>(h_)); }

 private:
  std::uint64_t h_ = 14695981039346656037ull;
};

/// The datasets of a checkpoint by full name, written in name order.
using Datasets = std::map<std::string, io::Array>;

void put_map(Datasets& d, const std::string& group, const TensorMap& m) {
  for (const auto& [name, t] : m) d[group + "/" + name] = to_array(t);
}

TensorMap take_map(const Datasets& d, const std::string& group) {
  TensorMap m;
  const std::string prefix = group + "/";
  for (const auto& [name, a] : d)
    if (name.rfind(prefix, 0) == 0) m[name.substr(prefix.size())] = from_array(a);
  return m;
}

std::string checksum(const Datasets& d, const std::string& config) {
  Checksum c;
  c.add(config);
  for (const auto& [name, a] : d) c.add(name, a);
  return c.hex();
}

/// In the molecule_names attribute: the names the molecule list gave follow this line, one per
/// molecule (eval --molecule traj@3 finds the run's traj_3 by it).
const char* const kGivenNamesMark = "# given names\n";

/// The attributes the checksum covers beside the datasets (version 3 on): the config, the
/// molecule names, and the run id and the resume history where present (so files without them
/// keep the text an earlier version summed).
std::string checksummed_text(const Checkpoint& c, const std::string& names) {
  return c.config_yaml + "\n" + names + (c.run_id.empty() ? "" : "\n" + c.run_id) +
         (c.history.empty() ? "" : "\nhistory " + c.history);
}

/// A dataset that must exist with the given type and number of dimensions.
const io::Array& require(const Datasets& d, const std::string& name, io::DType dtype, int dims,
                         const std::string& path) {
  const auto it = d.find(name);
  if (it == d.end()) throw CheckpointError(path + ": missing dataset '" + name + "'");
  if (it->second.dtype != dtype || static_cast<int>(it->second.shape.size()) != dims)
    throw CheckpointError(path + ": dataset '" + name + "' has the wrong type or shape");
  return it->second;
}

void put_system(Datasets& d, const std::string& group, const System& s) {
  const auto m = static_cast<int64_t>(s.atoms.size());
  auto z = torch::empty({m}, torch::kInt64);
  auto pos = torch::empty({m, 3}, torch::kFloat64);
  for (int64_t i = 0; i < m; ++i) {
    z[i] = s.atoms[i].Z;
    for (int k = 0; k < 3; ++k) pos[i][k] = s.atoms[i].position[k];
  }
  d[group + "/atomic_numbers"] = to_array(z);
  d[group + "/positions"] = to_array(pos);
  d[group + "/charge_spin"] = to_array(torch::tensor({int64_t(s.charge), int64_t(s.spin)}, torch::kInt64));
  // The molecule file's reference goes with its molecule: a run resumed or evaluated where that
  // file cannot be read states it still (a user audit: a moved run's summary lost every e_ref).
  if (s.e_ref) {
    d[group + "/e_ref"] = to_array(torch::tensor({*s.e_ref}, torch::kFloat64));
    if (!s.e_ref_source.empty()) {
      auto text = torch::empty({static_cast<int64_t>(s.e_ref_source.size())}, torch::kUInt8);
      std::memcpy(text.data_ptr(), s.e_ref_source.data(), s.e_ref_source.size());
      d[group + "/e_ref_source"] = to_array(text);
    }
  }
}

System take_system(const Datasets& d, const std::string& group, const std::string& name, const std::string& path) {
  const std::string g = group + "/";
  if (!d.count(g + "atomic_numbers") || !d.count(g + "positions") || !d.count(g + "charge_spin"))
    throw CheckpointError(path + ": no " + g + " group (a molecule it was trained on)");
  System s;
  s.name = name;
  const auto z = from_array(require(d, g + "atomic_numbers", io::DType::i64, 1, path));
  const auto pos = from_array(require(d, g + "positions", io::DType::f64, 2, path));
  const auto cs = from_array(require(d, g + "charge_spin", io::DType::i64, 1, path));
  if (pos.size(0) != z.size(0) || pos.size(1) != 3 || cs.numel() != 2)
    throw CheckpointError(path + ": malformed " + g + " group");
  for (int64_t i = 0; i < z.size(0); ++i)
    s.atoms.push_back({static_cast<int>(z[i].item<int64_t>()),
                       {pos[i][0].item<double>(), pos[i][1].item<double>(), pos[i][2].item<double>()}});
  s.charge = static_cast<int>(cs[0].item<int64_t>());
  s.spin = static_cast<int>(cs[1].item<int64_t>());
  if (d.count(g + "e_ref")) {  // (optional: a checkpoint before 2026-12-07, or a molecule without one, has none)
    const auto e = from_array(require(d, g + "e_ref", io::DType::f64, 1, path));
    if (e.numel() != 1) throw CheckpointError(path + ": malformed " + g + "e_ref");
    s.e_ref = e[0].item<double>();
    if (d.count(g + "e_ref_source")) {
      const auto text = from_array(require(d, g + "e_ref_source", io::DType::u8, 1, path));
      s.e_ref_source.assign(static_cast<const char*>(text.data_ptr()), static_cast<std::size_t>(text.numel()));
    }
  }
  try {
    s.validate();
  } catch (const InputError& e) {
    throw CheckpointError(path + ": " + g + ": " + e.what());
  }
  return s;
}

void put_sampler(Datasets& d, const std::string& group, const SamplerState& st) {
  d[group + "/positions"] = to_array(st.r);
  d[group + "/logabs"] = to_array(st.logabs);
  d[group + "/step_size"] = to_array(torch::tensor(st.step_size, torch::kFloat64));
  d[group + "/rng_state"] = to_array(st.rng_state);
}

SamplerState take_sampler(const Datasets& d, const std::string& group, const System& system, const std::string& path) {
  const std::string g = group + "/";
  SamplerState st;
  const auto& r = d.find(g + "positions");
  if (r == d.end() || r->second.shape.size() != 3 || (r->second.dtype != io::DType::f64 && r->second.dtype != io::DType::f32))
    throw CheckpointError(path + ": missing or malformed dataset '" + g + "positions' [B, N, 3]");
  st.r = from_array(r->second);
  if (st.r.size(1) != system.n_electrons() || st.r.size(2) != 3)
    throw CheckpointError(path + ": dataset '" + g + "positions' does not match the molecule's electrons");
  if (!d.count(g + "logabs")) throw CheckpointError(path + ": missing dataset '" + g + "logabs'");
  st.logabs = from_array(d.at(g + "logabs"));
  if (st.logabs.dim() != 1 || st.logabs.size(0) != st.r.size(0) || !st.logabs.is_floating_point())
    throw CheckpointError(path + ": dataset '" + g + "logabs' does not match the walkers");
  // (nnvmc writes walkers only after checking them: a NaN here is an altered file, which
  // evaluated to a number or failed ten steps later)
  if (!torch::isfinite(st.r).all().item<bool>() || torch::isnan(st.logabs).any().item<bool>())
    throw CheckpointError(path + ": non-finite walker positions or log|psi| in '" + group + "': the file is damaged");
  st.step_size = from_array(require(d, g + "step_size", io::DType::f64, 0, path)).item<double>();
  if (!(st.step_size > 0) || !std::isfinite(st.step_size))
    throw CheckpointError(path + ": " + g + "step_size must be a positive number");
  st.rng_state = from_array(require(d, g + "rng_state", io::DType::u8, 1, path));
  return st;
}

/// Molecule names from the attribute (one per line).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    if (ch == '\n') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

bool check_checkpoint_system(const System& trained, const System& target, const WaveFunction& wf) {
  bool same_atoms = trained.atoms.size() == target.atoms.size() && trained.n_up() == target.n_up() &&
                    trained.n_down() == target.n_down();
  double shift = 0;
  for (size_t i = 0; same_atoms && i < trained.atoms.size(); ++i) {
    same_atoms = trained.atoms[i].Z == target.atoms[i].Z;
    for (int k = 0; k < 3; ++k)
      shift = std::max(shift, std::abs(trained.atoms[i].position[k] - target.atoms[i].position[k]));
  }
  if (!same_atoms) {
    if (wf.transferable()) return false;
    auto describe = [](const System& s) {
      std::string z;
      for (const auto& a : s.atoms) z += (z.empty() ? "" : ",") + std::to_string(a.Z);
      return "'" + s.name + "' (Z = [" + z + "], " + std::to_string(s.n_up()) + " up / " +
             std::to_string(s.n_down()) + " down electrons)";
    };
    throw InputError("system.molecule: the checkpoint's " + wf.type() + " parameters were trained on " +
                     describe(trained) + " and cannot describe " + describe(target) +
                     "; only the geometry of the same atoms may change");
  }
  if (shift > 1e-12) {
    log::info(strfmt("'%s': nuclei moved by up to %.4f bohr from the trained geometry ('%s')", target.name.c_str(),
                     shift, trained.name.c_str()));
    return false;
  }
  return true;
}

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  if (c.molecules.empty()) throw Error("refusing to checkpoint a run without molecules");
  for (const auto& [n, t] : c.parameters) check_finite(n, t);
  for (const auto& [n, t] : c.optimizer) check_finite(n, t);
  for (const auto& [n, t] : c.frozen) check_finite(n, t);
  Datasets d;
  d["iteration"] = to_array(torch::tensor(c.iteration, torch::kInt64));
  d["trained_seconds"] = to_array(torch::tensor(c.trained_seconds, torch::kFloat64));
  std::string names, given;
  bool any_given = false;
  for (size_t i = 0; i < c.molecules.size(); ++i) {
    const auto& m = c.molecules[i];
    const std::string k = std::to_string(i);
    check_finite("sampler/" + k + "/positions", m.sampler.r);
    check_finite("sampler/" + k + "/logabs", m.sampler.logabs);
    put_system(d, "system/" + k, m.system);
    put_sampler(d, "sampler/" + k, m.sampler);
    if (m.laplacian_rng.defined()) d["laplacian/" + k + "/rng_state"] = to_array(m.laplacian_rng);
    names += m.system.name + "\n";
    std::string g = m.system.given_name.empty() ? m.system.name : m.system.given_name;
    std::replace(g.begin(), g.end(), '\n', ' ');  // (one per line)
    given += g + "\n";
    any_given = any_given || (!m.system.given_name.empty() && m.system.given_name != m.system.name);
  }
  // (only where a list named a molecule otherwise than the run does, "traj@3" for traj_3: files
  // without them keep the text an earlier version summed)
  if (any_given) names += kGivenNamesMark + given;
  put_map(d, "parameters", c.parameters);
  put_map(d, "optimizer", c.optimizer);
  put_map(d, "frozen", c.frozen);
  io::write_atomically(path, [&](io::H5File& f) {
    f.set_attr("format", "nnvmc-checkpoint");
    f.set_attr("version", std::to_string(kCheckpointVersion));
    f.set_attr("config", c.config_yaml);
    f.set_attr("molecule_names", names);
    if (!c.run_id.empty()) f.set_attr("run_id", c.run_id);
    if (!c.history.empty()) f.set_attr("history", c.history);
    f.set_attr("checksum", checksum(d, checksummed_text(c, names)));
    for (const auto& [name, a] : d) f.write(name, a);
  });
}

Checkpoint load_checkpoint(const std::string& path) {
  std::error_code ec;  // (a FIFO or a device would block the open for ever)
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw CheckpointError(path + ": not a regular file");
  io::H5File f(path, io::H5File::Mode::read);
  if (!f.has_attr("format") || f.attr("format") != "nnvmc-checkpoint")
    throw CheckpointError(path + ": not an nnvmc checkpoint (no nnvmc format mark: another HDF5 file, or a "
                                 "checkpoint whose header is damaged)");
  const std::string version = f.has_attr("version") ? f.attr("version") : "(none)";
  if (version != std::to_string(kCheckpointVersion) && version != "2" && version != "3" && version != "4")
    throw CheckpointError(path + ": checkpoint format version " + version + ", this nnvmc reads versions 2 to " +
                          std::to_string(kCheckpointVersion));
  const bool v2 = version == "2";
  if (!f.has_attr("config")) throw CheckpointError(path + ": no config attribute");
  Checkpoint c;
  c.config_yaml = f.attr("config");
  Datasets d;
  for (const auto& name : f.list("/")) d[name] = f.read(name);
  const std::string names_attr = !v2 && f.has_attr("molecule_names") ? f.attr("molecule_names") : "";
  c.run_id = !v2 && f.has_attr("run_id") ? f.attr("run_id") : "";
  c.history = !v2 && f.has_attr("history") ? f.attr("history") : "";
  // Version-2 files written before checksums were added have none; every later file has one.
  if (!v2 && !f.has_attr("checksum")) throw CheckpointError(path + ": no checksum attribute: the file is damaged");
  if (f.has_attr("checksum") && f.attr("checksum") != checksum(d, v2 ? c.config_yaml : checksummed_text(c, names_attr)))
    throw CheckpointError(path + ": checksum mismatch: the file is damaged");
  c.checksum = f.has_attr("checksum") ? f.attr("checksum") : checksum(d, c.config_yaml);
  c.iteration = from_array(require(d, "iteration", io::DType::i64, 0, path)).item<int64_t>();
  // (optim.iterations is an int: a larger count is an altered file, which padded result.h5 with
  // that many NaN rows or failed in std::vector)
  if (c.iteration < 0 || c.iteration > std::numeric_limits<int>::max())
    throw CheckpointError(path + ": iteration " + std::to_string(c.iteration) + " out of range: the file is damaged");
  if (d.count("trained_seconds")) {  // (absent in files written before 2026-12-04)
    c.trained_seconds = from_array(require(d, "trained_seconds", io::DType::f64, 0, path)).item<double>();
    if (!std::isfinite(c.trained_seconds) || c.trained_seconds < 0)
      throw CheckpointError(path + ": trained_seconds must be a finite number >= 0");
  }
  if (v2) {  // one molecule, groups without an index
    MoleculeCheckpoint m;
    m.system = take_system(d, "system", f.has_attr("system_name") ? f.attr("system_name") : "", path);
    m.sampler = take_sampler(d, "sampler", m.system, path);
    if (d.count("laplacian/rng_state"))
      m.laplacian_rng = from_array(require(d, "laplacian/rng_state", io::DType::u8, 1, path));
    c.molecules.push_back(std::move(m));
  } else {
    const auto mark = names_attr.find(kGivenNamesMark);
    const auto names = split_lines(names_attr.substr(0, mark));
    const auto given = mark == std::string::npos ? std::vector<std::string>{}
                                                 : split_lines(names_attr.substr(mark + std::strlen(kGivenNamesMark)));
    if (names.empty()) throw CheckpointError(path + ": no molecule_names attribute (the molecules of the run)");
    if (!given.empty() && given.size() != names.size())
      throw CheckpointError(path + ": molecule_names gives " + std::to_string(given.size()) + " given names for " +
                            std::to_string(names.size()) + " molecules: the file is damaged");
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string k = std::to_string(i);
      MoleculeCheckpoint m;
      m.system = take_system(d, "system/" + k, names[i], path);
      if (!given.empty()) m.system.given_name = given[i];
      m.sampler = take_sampler(d, "sampler/" + k, m.system, path);
      if (d.count("laplacian/" + k + "/rng_state"))
        m.laplacian_rng = from_array(require(d, "laplacian/" + k + "/rng_state", io::DType::u8, 1, path));
      c.molecules.push_back(std::move(m));
    }
    if (d.count("system/" + std::to_string(names.size()) + "/atomic_numbers"))
      throw CheckpointError(path + ": more molecules under system/ than names in molecule_names");
  }
  c.parameters = take_map(d, "parameters");
  c.optimizer = take_map(d, "optimizer");
  c.frozen = take_map(d, "frozen");
  // nnvmc never writes non-finite values (save_checkpoint refuses them): such a file was altered
  for (const auto* m : {&c.parameters, &c.optimizer, &c.frozen})
    for (const auto& [name, t] : *m)
      if (t.is_floating_point() && !torch::isfinite(t).all().item<bool>())
        throw CheckpointError(path + ": non-finite values in '" + name + "': the file is damaged");
  // A random-number state the generator does not accept is a damaged file, not a crash later.
  for (const auto& m : c.molecules) {
    for (const auto& state : {m.sampler.rng_state, m.laplacian_rng}) {
      if (!state.defined()) continue;
      if (parallel::is_counter_state(state)) continue;
      try {  // a generator state written by an older nnvmc
        at::make_generator<at::CPUGeneratorImpl>(0).set_state(state);
      } catch (const c10::Error&) {
        throw CheckpointError(path + ": malformed random-number generator state");
      }
    }
  }
  // No parameters is valid (model.type hf); a file that lost some is refused when they are
  // loaded into the model (load_module_state names the first one missing).
  return c;
}

void load_frozen_state(WaveFunction& wf, const Checkpoint& c) {
  if (c.frozen.empty()) {
    if (!wf.frozen_state().empty())
      log::warn("the checkpoint, written by an earlier nnvmc, does not hold the " + wf.type() +
                " model's frozen tensors: they were recomputed (the Hartree-Fock orbitals of the same SCF), which "
                "may differ from the trained ones where orbitals are degenerate");
    return;
  }
  wf.load_frozen_state(c.frozen);
}

bool load_trained_state(WaveFunction& wf, const Checkpoint& c, const std::vector<const System*>& targets) {
  bool same_geometries = !wf.transferable();  // a transferable model has no frozen tensors of one geometry
  if (same_geometries)
    for (const System* t : targets)  // every target is checked: another molecule is refused, a move is logged
      same_geometries = check_checkpoint_system(c.molecules.front().system, *t, wf) && same_geometries;
  load_module_state(wf, c.parameters);
  if (same_geometries) load_frozen_state(wf, c);
  if (wf.transferable()) {
    // Elements no trained molecule had: their parameters (an orbformer's element embeddings and
    // envelopes) are as initialised (He from an H2/LiH checkpoint fine-tuned to 0.8 Eh above a new
    // run's start without a word, a user audit)
    std::set<int> seen;
    std::string trained_on;
    for (const auto& m : c.molecules) {
      for (const auto& a : m.system.atoms) seen.insert(a.Z);
      trained_on += (trained_on.empty() ? "" : ", ") + m.system.name;
    }
    for (const System* t : targets) {
      std::set<int> unseen;
      for (const auto& a : t->atoms)
        if (!seen.count(a.Z)) unseen.insert(a.Z);
      std::string names;
      for (const int Z : unseen) names += (names.empty() ? "" : ", ") + element_symbol(Z);
      if (!names.empty())
        log::warn(strfmt("%s: element%s %s in none of the checkpoint's molecules (%s): unless a run it was "
                         "fine-tuned from had %s, the parameters for %s are untrained, as a new model's",
                         t->name.c_str(), unseen.size() == 1 ? "" : "s", names.c_str(), trained_on.c_str(),
                         unseen.size() == 1 ? "it" : "them", unseen.size() == 1 ? "it" : "them"));
    }
  }
  return same_geometries;
}

TensorMap module_state(const torch::nn::Module& module) {
  TensorMap m;
  for (const auto& p : module.named_parameters()) m[p.key()] = p.value().detach().clone();
  return m;
}

bool is_retired_parameter(const std::string& name) {
  return name.substr(name.rfind('.') + 1).rfind("edge_scale", 0) == 0;  // electrons.edge_scale0 -> edge_scale0
}

void load_module_state(torch::nn::Module& module, const TensorMap& state) {
  torch::NoGradGuard no_grad;
  auto copy = [&](const std::string& name, torch::Tensor& dst) {
    const auto it = state.find(name);
    if (it == state.end()) throw CheckpointError("checkpoint lacks parameter '" + name + "'");
    if (it->second.sizes() != dst.sizes())
      throw CheckpointError("parameter '" + name + "' has shape " +
                            c10::str(it->second.sizes()) + " in the checkpoint, the model wants " +
                            c10::str(dst.sizes()));
    dst.copy_(it->second);
  };
  const auto params = module.named_parameters();
  // Parameters the model does not have mean another model (model.type or its settings changed):
  // loading the rest would silently evaluate, and then overwrite, a different wavefunction.
  std::string ignored;
  for (const auto& [name, value] : state) {
    if (params.contains(name)) continue;
    if (!is_retired_parameter(name))
      throw CheckpointError("checkpoint holds parameter '" + name + "', which this model (" +
                            std::to_string(params.size()) + " parameters) does not have: it was written by a "
                            "different model (model.type or model settings changed?)");
    ignored += (ignored.empty() ? "" : ", ") + name;
  }
  if (!ignored.empty()) log::info("checkpoint parameters this model does not have, left out: " + ignored);
  for (auto& p : module.named_parameters()) copy(p.key(), p.value());
}

}  // namespace nnvmc
