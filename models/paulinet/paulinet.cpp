/// @file paulinet.cpp
/// PauliNet: baseline SCF, parameters, and the two instantiations of the body.
#include "models/paulinet/paulinet.hpp"

#include "core/errors.hpp"
#include "core/log.hpp"
#include "models/paulinet/paulinet_body.hpp"
#include "models/system_tensors.hpp"
#include "scf/basis_table.hpp"
#include "scf/scf.hpp"

namespace nnvmc {

namespace {
torch::Tensor to_tensor(const Eigen::MatrixXd& m) {
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rm = m;
  return torch::from_blob(const_cast<double*>(rm.data()), {rm.rows(), rm.cols()}, torch::kFloat64).clone();
}
int64_t count(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}
}  // namespace

PauliNet::PauliNet(const PaulinetOptions& options, const System& system)
    : options_(options),
      n_up_(system.n_up()),
      n_down_(system.n_down()),
      n_atoms_(static_cast<int64_t>(system.atoms.size())),
      n_orb_(std::max(system.n_up(), system.n_down())) {
  if (n_up_ > 0) spins_.push_back({0, n_up_});
  if (n_down_ > 0) spins_.push_back({n_up_, n_up_ + n_down_});
  set_built_for(system);

  // Baseline: RHF for closed shells unless UHF is asked for; UHF for open shells.
  const auto basis = [&] {
    try {
      return scf::make_basis(options.basis, system);
    } catch (const ConfigError&) {
      throw;
    } catch (const InputError& e) {  // unknown basis, or one without this molecule's elements
      throw ConfigError(std::string("'model.paulinet.basis': ") + e.what());
    }
  }();
  scf::ScfOptions so;
  so.unrestricted = options.unrestricted || n_up_ != n_down_;
  restricted_ = !so.unrestricted;
  const auto hf = scf::run_scf(system, basis, so);
  e_hf_ = hf.energy;
  if (hf.n_mo < n_orb_)
    throw InputError("'model.paulinet.basis': basis '" + options.basis + "' has fewer orbitals than electrons of one spin");
  table64_ = scf::basis_table(basis);
  const Eigen::MatrixXd* c[2] = {&hf.c_alpha, &hf.c_beta};
  const char* tag[2] = {"_up", "_down"};
  for (int s = 0; s < (restricted_ ? 1 : 2); ++s) {
    const std::string suffix = restricted_ ? "" : tag[s];
    auto coef = to_tensor(c[s]->leftCols(n_orb_));
    // Frozen: a buffer (follows the module's device and dtype; not a parameter, not checkpointed).
    coefficients_[s] = options.freeze_baseline ? register_buffer("mo_coefficients" + suffix, coef)
                                               : register_parameter("mo_coefficients" + suffix, coef);
    if (options.cusp_correction && options.cusp_shifts) {
      // from the flattest local energy inside the spheres (zero kept the Gaussian's value at the
      // nucleus: LiH/STO-3G's determinant 80 mEh above E_HF until they trained)
      const auto sys = system_tensors(system, torch::kFloat64);
      shifts_[s] = register_parameter("cusp_shift" + suffix,
                                      initial_cusp_shifts(table64_, coef, sys.nuclei, sys.charges, options.rc_scaling));
    }
  }
  if (restricted_) {
    coefficients_[1] = coefficients_[0];
    shifts_[1] = shifts_[0];
  }

  if (options.jastrow || options.backflow) {
    schnet_ = register_module("schnet", SchNet(n_up_, n_down_, n_atoms_, options));
    if (options.jastrow)
      jastrow_ = register_module("jastrow", Mlp(log_widths(options.embedding_dim, 1, options.jastrow_layers), false));
    if (options.backflow)
      backflow_ = register_module(
          "backflow", Mlp(log_widths(options.embedding_dim, static_cast<int>(n_orb_), options.backflow_layers), true));
  }
  this->to(torch::kFloat64);
  const auto n = parameter_counts();
  log::info(strfmt("paulinet: %s/%s baseline (E_HF = %.6f Eh), %ld trainable parameters: graph network %ld, "
                   "Jastrow %ld, backflow %ld, cusp shifts %ld, MO coefficients %ld",
                   restricted_ ? "RHF" : "UHF", options.basis.c_str(), e_hf_,
                   static_cast<long>(n[0] + n[1] + n[2] + n[3] + n[4]), static_cast<long>(n[0]),
                   static_cast<long>(n[1]), static_cast<long>(n[2]), static_cast<long>(n[3]), static_cast<long>(n[4])));
}

std::optional<HartreeFockEnergy> PauliNet::built_in_hartree_fock() const {
  return HartreeFockEnergy{e_hf_, std::string(restricted_ ? "RHF/" : "UHF/") + options_.basis + ", the PauliNet baseline"};
}

std::array<int64_t, 5> PauliNet::parameter_counts() const {
  std::array<int64_t, 5> n{0, 0, 0, 0, 0};
  if (schnet_) n[0] = count(*schnet_);
  if (jastrow_) n[1] = count(*jastrow_);
  if (backflow_) n[2] = count(*backflow_);
  for (int s = 0; s < (restricted_ ? 1 : 2); ++s) {
    if (shifts_[s].defined()) n[3] += shifts_[s].numel();
    if (!options_.freeze_baseline) n[4] += coefficients_[s].numel();
  }
  return n;
}

std::map<std::string, torch::Tensor> PauliNet::frozen_state() const {
  std::map<std::string, torch::Tensor> m;
  if (!options_.freeze_baseline) return m;  // then they are parameters
  for (const auto& b : named_buffers(false))
    if (b.key().rfind("mo_coefficients", 0) == 0) m[b.key()] = b.value().detach().clone();
  return m;
}

const GaussianBasisTable& PauliNet::table_for(const torch::Tensor& like) {
  const std::lock_guard<std::mutex> lock(table_mutex_);
  if (!table_.prim_exp.defined() || table_.prim_exp.scalar_type() != like.scalar_type() ||
      table_.prim_exp.device() != like.device())
    table_ = table64_.to(like.options());
  return table_;
}

GaussianOrbitalSpec PauliNet::baseline(int spin, const SystemTensors& sys, const torch::Tensor& like) {
  const auto opts = like.options();
  GaussianOrbitalSpec spec;
  spec.basis = &table_for(like);
  spec.coefficients = coefficients_[spin].to(opts);
  spec.nuclei = sys.nuclei.to(opts);
  if (options_.cusp_correction)
    spec.cusps = fit_orbital_cusps(*spec.basis, spec.coefficients, spec.nuclei, sys.charges.to(opts), shifts_[spin],
                                   options_.rc_scaling);
  return spec;
}

LogPsi PauliNet::forward(const torch::Tensor& r, const SystemTensors& sys) {
  return log_psi<torch::Tensor>(r, sys);
}

SignedFwdLap PauliNet::forward_laplacian(const FwdLap& r, const SystemTensors& sys) {
  return log_psi<FwdLap>(r, sys);
}

std::shared_ptr<WaveFunction> make_paulinet(const PaulinetOptions& options, const System& system) {
  return std::make_shared<PauliNet>(options, system);
}

}  // namespace nnvmc
