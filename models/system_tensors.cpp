#include "models/system_tensors.hpp"

namespace nnvmc {

std::vector<std::array<int64_t, 2>> SystemTensors::spin_ranges() const {
  std::vector<std::array<int64_t, 2>> out;
  if (n_up > 0) out.push_back({0, n_up});
  if (n_down > 0) out.push_back({n_up, n_up + n_down});
  return out;
}

SystemTensors SystemTensors::to(torch::TensorOptions options) const {
  SystemTensors out = *this;
  out.nuclei = nuclei.to(options);
  out.charges = charges.to(options);
  return out;
}

SystemTensors system_tensors(const System& system, torch::TensorOptions options) {
  const auto m = static_cast<int64_t>(system.atoms.size());
  auto pos = torch::empty({m, 3}, torch::kFloat64);
  auto z = torch::empty({m}, torch::kFloat64);
  auto p = pos.accessor<double, 2>();
  auto q = z.accessor<double, 1>();
  SystemTensors out;
  for (int64_t i = 0; i < m; ++i) {
    for (int k = 0; k < 3; ++k) p[i][k] = system.atoms[i].position[k];
    q[i] = system.atoms[i].Z;
    out.atomic_numbers.push_back(system.atoms[i].Z);
  }
  out.nuclei = pos.to(options);
  out.charges = z.to(options);
  out.n_up = system.n_up();
  out.n_down = system.n_down();
  return out;
}

}  // namespace nnvmc
