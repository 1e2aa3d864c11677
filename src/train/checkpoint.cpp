#include "train/checkpoint.hpp"

#include <cmath>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "io/hdf5_file.hpp"

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

void write_map(io::H5File& f, const std::string& group, const TensorMap& m) {
  for (const auto& [name, t] : m) f.write(group + "/" + name, to_array(t));
}

TensorMap read_map(const io::H5File& f, const std::string& group) {
  TensorMap m;
  for (const auto& name : f.list(group)) m[name] = from_array(f.read(group + "/" + name));
  return m;
}

void write_system(io::H5File& f, const System& s) {
  const auto m = static_cast<int64_t>(s.atoms.size());
  auto z = torch::empty({m}, torch::kInt64);
  auto pos = torch::empty({m, 3}, torch::kFloat64);
  for (int64_t i = 0; i < m; ++i) {
    z[i] = s.atoms[i].Z;
    for (int k = 0; k < 3; ++k) pos[i][k] = s.atoms[i].position[k];
  }
  f.set_attr("system_name", s.name);
  f.write("system/atomic_numbers", to_array(z));
  f.write("system/positions", to_array(pos));
  f.write("system/charge_spin", to_array(torch::tensor({int64_t(s.charge), int64_t(s.spin)}, torch::kInt64)));
}

System read_system(const io::H5File& f, const std::string& path) {
  if (!f.exists("system/atomic_numbers") || !f.exists("system/positions") || !f.exists("system/charge_spin"))
    throw CheckpointError(path + ": no system/ group (the molecule it was trained on)");
  System s;
  s.name = f.has_attr("system_name") ? f.attr("system_name") : "";
  const auto z = from_array(f.read("system/atomic_numbers"));
  const auto pos = from_array(f.read("system/positions"));
  const auto cs = from_array(f.read("system/charge_spin"));
  if (z.dim() != 1 || pos.dim() != 2 || pos.size(0) != z.size(0) || pos.size(1) != 3 || cs.numel() != 2 ||
      z.scalar_type() != torch::kInt64 || pos.scalar_type() != torch::kFloat64 || cs.scalar_type() != torch::kInt64)
    throw CheckpointError(path + ": malformed system/ group");
  for (int64_t i = 0; i < z.size(0); ++i)
    s.atoms.push_back({static_cast<int>(z[i].item<int64_t>()),
                       {pos[i][0].item<double>(), pos[i][1].item<double>(), pos[i][2].item<double>()}});
  s.charge = static_cast<int>(cs[0].item<int64_t>());
  s.spin = static_cast<int>(cs[1].item<int64_t>());
  return s;
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
    log::info(strfmt("evaluating at a new geometry: nuclei moved by up to %.4f bohr from the trained one", shift));
    return false;
  }
  return true;
}

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  for (const auto& [n, t] : c.parameters) check_finite(n, t);
  for (const auto& [n, t] : c.optimizer) check_finite(n, t);
  check_finite("sampler/positions", c.sampler.r);
  check_finite("sampler/logabs", c.sampler.logabs);
  io::write_atomically(path, [&](io::H5File& f) {
    f.set_attr("format", "nnvmc-checkpoint");
    f.set_attr("version", std::to_string(kCheckpointVersion));
    f.set_attr("config", c.config_yaml);
    f.write("iteration", to_array(torch::tensor(c.iteration, torch::kInt64)));
    write_system(f, c.system);
    write_map(f, "parameters", c.parameters);
    write_map(f, "optimizer", c.optimizer);
    f.write("sampler/positions", to_array(c.sampler.r));
    f.write("sampler/logabs", to_array(c.sampler.logabs));
    f.write("sampler/step_size", to_array(torch::tensor(c.sampler.step_size, torch::kFloat64)));
    f.write("sampler/rng_state", to_array(c.sampler.rng_state));
    if (c.laplacian_rng.defined()) f.write("laplacian/rng_state", to_array(c.laplacian_rng));
  });
}

Checkpoint load_checkpoint(const std::string& path) {
  io::H5File f(path, io::H5File::Mode::read);
  if (!f.has_attr("format") || f.attr("format") != "nnvmc-checkpoint")
    throw CheckpointError(path + ": not an nnvmc checkpoint");
  const std::string version = f.attr("version");
  if (version != std::to_string(kCheckpointVersion))
    throw CheckpointError(path + ": checkpoint format version " + version + ", this nnvmc reads " +
                          std::to_string(kCheckpointVersion));
  Checkpoint c;
  c.config_yaml = f.attr("config");
  c.iteration = from_array(f.read("iteration")).item<int64_t>();
  c.system = read_system(f, path);
  c.parameters = read_map(f, "parameters");
  c.optimizer = read_map(f, "optimizer");
  c.sampler.r = from_array(f.read("sampler/positions"));
  c.sampler.logabs = from_array(f.read("sampler/logabs"));
  c.sampler.step_size = from_array(f.read("sampler/step_size")).item<double>();
  c.sampler.rng_state = from_array(f.read("sampler/rng_state"));
  if (f.exists("laplacian/rng_state")) c.laplacian_rng = from_array(f.read("laplacian/rng_state"));
  if (c.parameters.empty()) throw CheckpointError(path + ": no parameters");
  return c;
}

TensorMap module_state(const torch::nn::Module& module) {
  TensorMap m;
  for (const auto& p : module.named_parameters()) m[p.key()] = p.value().detach().clone();
  return m;
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
  for (auto& p : module.named_parameters()) copy(p.key(), p.value());
}

}  // namespace nnvmc
