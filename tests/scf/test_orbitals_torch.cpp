/// Gaussian orbitals on electron positions (libtorch): values, normalisation by quadrature,
/// autograd Laplacians against finite differences, the HF Slater determinant.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <libint2/solidharmonics.h>

#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>

#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/integrals.hpp"
#include "scf/orbitals_torch.hpp"
#include "scf/scf.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

namespace {

/// Straightforward scalar evaluation of χ_p(x) for checking the vectorised torch code.
Eigen::VectorXd ao_direct(const BasisSet& basis, const std::array<double, 3>& x) {
  Eigen::VectorXd out(basis.n_functions());
  std::size_t f = 0;
  for (const auto& sh : basis.shells()) {
    const double dx = x[0] - sh.O[0], dy = x[1] - sh.O[1], dz = x[2] - sh.O[2];
    const double r2 = dx * dx + dy * dy + dz * dz;
    double radial = 0;
    for (std::size_t k = 0; k < sh.nprim(); ++k) radial += sh.contr[0].coeff[k] * std::exp(-sh.alpha[k] * r2);
    const int l = sh.contr[0].l;
    std::vector<double> cart;
    std::vector<std::array<int, 3>> pw;
    for (int a = l; a >= 0; --a)
      for (int b = l - a; b >= 0; --b) {
        cart.push_back(std::pow(dx, a) * std::pow(dy, b) * std::pow(dz, l - a - b) * radial);
        pw.push_back({a, b, l - a - b});
      }
    if (!sh.contr[0].pure) {
      for (double v : cart) out(f++) = v;
    } else {
      for (int m = -l; m <= l; ++m) {
        double v = 0;
        for (std::size_t c = 0; c < cart.size(); ++c)
          v += libint2::solidharmonics::SolidHarmonicsCoefficients<double>::coeff(l, m, pw[c][0], pw[c][1], pw[c][2]) * cart[c];
        out(f++) = v;
      }
    }
  }
  return out;
}

torch::Tensor random_positions(int64_t B, int64_t N, double scale, uint64_t seed) {
  torch::manual_seed(seed);
  return scale * torch::randn({B, N, 3}, torch::kFloat64);
}

/// A two-centre test basis with s, p, d and f shells of moderate exponents (grid-friendly).
BasisSet grid_basis(bool spherical) {
  const std::string dir = ::testing::TempDir() + "/nnvmc_grid_basis";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/grid.nw") << "BASIS \"ao basis\" SPHERICAL\n"
                                     "C S\n 1.2 0.6\n 0.4 0.5\nC P\n 0.9 1.0\nC D\n 0.8 0.7\n 0.5 0.4\n"
                                     "C F\n 0.7 1.0\n"
                                     "H S\n 0.6 1.0\nH P\n 0.5 1.0\nH D\n 0.9 1.0\nEND\n";
  System s;
  s.atoms = {Atom{6, {0.1, -0.2, 0.0}}, Atom{1, {0.3, 0.4, 1.3}}};
  BasisOptions o;
  o.directory = dir;
  o.spherical = spherical;
  return make_basis("grid", s, o);
}

}  // namespace

TEST(GaussianOrbitals, BasisValuesMatchADirectScalarEvaluation) {
  for (const char* b : {"cc-pvtz", "6-31g*"}) {
    const System s = load_molecule("h2o", scftest::kMolecules);
    const BasisSet basis = make_basis(b, s);
    const GaussianOrbitals g(basis, Eigen::MatrixXd::Identity(basis.n_functions(), basis.n_functions()));
    const torch::Tensor r = random_positions(3, 4, 1.5, 1);
    const torch::Tensor ao = g.basis_values(r);
    const torch::Tensor mo = g(r);
    ASSERT_EQ(ao.sizes(), (std::vector<int64_t>{3, 4, static_cast<int64_t>(basis.n_functions())}));
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        const auto x = r[i][j];
        const Eigen::VectorXd ref = ao_direct(basis, {x[0].item<double>(), x[1].item<double>(), x[2].item<double>()});
        for (int64_t p = 0; p < ao.size(2); ++p) {
          EXPECT_NEAR(ao[i][j][p].item<double>(), ref(p), 1e-12 * (1 + std::abs(ref(p)))) << b << " function " << p;
          EXPECT_NEAR(mo[i][j][p].item<double>(), ref(p), 1e-12 * (1 + std::abs(ref(p))));
        }
      }
  }
}

TEST(GaussianOrbitals, GridQuadratureReproducesTheLibintOverlap) {
  // ∫ χ_p χ_q on a uniform grid (trapezoidal rule, spectrally accurate for Gaussians) equals
  // S_pq: checks normalisation, component order and the Cartesian → spherical transform.
  for (bool spherical : {true, false}) {
    const BasisSet basis = grid_basis(spherical);
    const Eigen::MatrixXd S = overlap_matrix(basis);
    const GaussianOrbitals g(basis, Eigen::MatrixXd::Identity(basis.n_functions(), basis.n_functions()));
    const double h = 0.25, L = 6.5;  // e^{-π²/(p h²)} quadrature error ≪ 1e-9 for these exponents
    const torch::Tensor axis = torch::arange(-L, L + 1e-9, h, torch::kFloat64);
    const int64_t n = axis.size(0);
    const auto yz = torch::meshgrid({axis, axis}, "ij");
    const torch::Tensor plane = torch::stack({yz[0].reshape(-1), yz[1].reshape(-1)}, -1);  // [n², 2]
    torch::Tensor Sq = torch::zeros({g.n_basis(), g.n_basis()}, torch::kFloat64);
    const int64_t chunk = 16;
    for (int64_t i0 = 0; i0 < n; i0 += chunk) {
      const int64_t m = std::min(chunk, n - i0);
      const torch::Tensor x = axis.narrow(0, i0, m).view({m, 1, 1}).expand({m, n * n, 1});
      const torch::Tensor r = torch::cat({x, plane.unsqueeze(0).expand({m, n * n, 2})}, -1);
      const torch::Tensor ao = g.basis_values(r).reshape({-1, g.n_basis()});
      Sq += torch::matmul(ao.t(), ao) * (h * h * h);
    }
    for (int64_t p = 0; p < g.n_basis(); ++p)
      for (int64_t q = 0; q < g.n_basis(); ++q)
        EXPECT_NEAR(Sq[p][q].item<double>(), S(p, q), 1e-9) << (spherical ? "spherical " : "cartesian ") << p << "," << q;
  }
}

TEST(GaussianOrbitals, AutogradLaplacianMatchesFiniteDifferences) {
  const System s = load_molecule("h2o", scftest::kMolecules);
  const BasisSet basis = make_basis("cc-pvdz", s);
  const ScfResult hf = run_rhf(s, basis);
  const auto orbs = occupied_orbitals(hf, basis);
  const torch::Tensor r = random_positions(2, 3, 1.0, 7).requires_grad_(true);
  const torch::Tensor phi = orbs.alpha(r);  // [2, 3, 5]
  const double eps = 1e-4;
  for (int64_t j = 0; j < phi.size(2); ++j) {
    const torch::Tensor grad = torch::autograd::grad({phi.select(2, j).sum()}, {r}, {}, true, true)[0];
    torch::Tensor lap = torch::zeros({2, 3}, torch::kFloat64);
    for (int k = 0; k < 3; ++k) {
      const torch::Tensor g2 = torch::autograd::grad({grad.select(2, k).sum()}, {r}, {}, true)[0];
      lap += g2.select(2, k);
    }
    // Central second differences (each electron's orbital depends on its own position only).
    torch::NoGradGuard no_grad;
    const torch::Tensor r0 = r.detach();
    torch::Tensor fd = -6 * orbs.alpha(r0).select(2, j);
    for (int k = 0; k < 3; ++k) {
      torch::Tensor dr = torch::zeros_like(r0);
      dr.select(2, k).fill_(eps);
      fd += orbs.alpha(r0 + dr).select(2, j) + orbs.alpha(r0 - dr).select(2, j);
    }
    fd /= eps * eps;
    EXPECT_LT((lap - fd).abs().max().item<double>(), 1e-4 * (1 + lap.abs().max().item<double>())) << "orbital " << j;
  }
}

TEST(GaussianOrbitals, DerivativesAreFiniteAtTheNuclei) {
  const System s = load_molecule("h2o", scftest::kMolecules);
  const BasisSet basis = make_basis("sto-3g", s);
  const auto orbs = occupied_orbitals(run_rhf(s, basis), basis);
  std::vector<double> xyz;
  for (const Atom& a : s.atoms) xyz.insert(xyz.end(), a.position.begin(), a.position.end());
  const torch::Tensor r = torch::tensor(xyz, torch::kFloat64).view({1, 3, 3}).requires_grad_(true);
  const torch::Tensor phi = orbs.alpha(r).sum();
  const torch::Tensor grad = torch::autograd::grad({phi}, {r}, {}, true, true)[0];
  const torch::Tensor g2 = torch::autograd::grad({grad.sum()}, {r})[0];
  EXPECT_TRUE(torch::isfinite(grad).all().item<bool>());
  EXPECT_TRUE(torch::isfinite(g2).all().item<bool>());
}

TEST(GaussianOrbitals, Float32AgreesWithFloat64) {
  const System s = load_molecule("lih", scftest::kMolecules);
  const BasisSet basis = make_basis("cc-pvdz", s);
  const ScfResult hf = run_rhf(s, basis);
  const auto o64 = occupied_orbitals(hf, basis, torch::kFloat64);
  const auto o32 = occupied_orbitals(hf, basis, torch::kFloat32);
  const torch::Tensor r = random_positions(4, 4, 2.0, 3);
  const torch::Tensor v32 = o32.alpha(r.to(torch::kFloat32));
  EXPECT_EQ(v32.scalar_type(), torch::kFloat32);
  EXPECT_LT((v32.to(torch::kFloat64) - o64.alpha(r)).abs().max().item<double>(), 1e-5);
}

// Orbitals turned with their molecule: the coefficients D·C (turned_functions) on the basis with
// turned centres, at turned points, give the orbitals' values at the original points, for s to f
// shells, spherical and Cartesian (the Cartesian d and f functions are not orthonormal, so D is
// no orthogonal matrix there), and the identity turns nothing.
TEST(GaussianOrbitals, TurnedFunctionsTurnOrbitalsWithTheirMolecule) {
  const Eigen::Matrix3d rotation =
      (Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, -0.5).normalized()) * Eigen::AngleAxisd(2.1, Eigen::Vector3d::UnitX()))
          .toRotationMatrix();
  for (const bool spherical : {true, false}) {
    const BasisSet basis = grid_basis(spherical);
    std::vector<libint2::Shell> shells = basis.shells();
    for (auto& sh : shells) {
      const Eigen::Vector3d o = rotation * Eigen::Vector3d(sh.O[0], sh.O[1], sh.O[2]);
      for (int x = 0; x < 3; ++x) sh.O[static_cast<std::size_t>(x)] = o[x];
    }
    const BasisSet turned_basis(basis.name(), shells, basis.shell_atoms());
    const auto n = static_cast<Eigen::Index>(basis.n_functions());
    const Eigen::MatrixXd c = Eigen::MatrixXd::Random(n, 3);
    const Eigen::MatrixXd d = turned_functions(basis, rotation);
    const torch::Tensor x = random_positions(1, 50, 1.5, 11);
    Eigen::Matrix3d transposed = rotation.transpose();
    const torch::Tensor r = torch::from_blob(transposed.data(), {3, 3}, torch::kFloat64).clone();  // (Rᵀ read row-major: R)
    const torch::Tensor turned_x = torch::matmul(x, r.t());   // rows R·x
    const auto original = GaussianOrbitals(basis, c)(x), turned = GaussianOrbitals(turned_basis, d * c)(turned_x);
    EXPECT_LT((turned - original).abs().max().item<double>(), 1e-12) << spherical;
    EXPECT_GT(original.abs().max().item<double>(), 0.1);
    if (spherical) {  // (unit-normalised real solid harmonics turn orthogonally)
      EXPECT_LT((d.transpose() * d - Eigen::MatrixXd::Identity(n, n)).cwiseAbs().maxCoeff(), 1e-10);
    }
    const Eigen::MatrixXd unturned = turned_functions(basis, Eigen::Matrix3d::Identity());
    EXPECT_LT((unturned - Eigen::MatrixXd::Identity(n, n)).cwiseAbs().maxCoeff(), 1e-12) << spherical << "\n" << unturned;
  }
}

TEST(HartreeFockOrbitals, SlaterDeterminantIsAntisymmetricUnderExchangeOfSameSpinElectrons) {
  const System s = load_molecule("li", scftest::kMolecules);
  const BasisSet basis = make_basis("cc-pvdz", s);
  const auto orbs = occupied_orbitals(run_uhf(s, basis), basis);
  ASSERT_EQ(orbs.n_alpha, 2);
  ASSERT_EQ(orbs.n_beta, 1);
  const torch::Tensor r = random_positions(5, 3, 1.5, 11);
  const auto [up, down] = orbs.matrices(r);
  EXPECT_EQ(up.sizes(), (std::vector<int64_t>{5, 2, 2}));
  EXPECT_EQ(down.sizes(), (std::vector<int64_t>{5, 1, 1}));
  const auto [sign, logabs] = orbs.log_slater(r);
  const torch::Tensor swapped = r.index_select(1, torch::tensor({1, 0, 2}));
  const auto [sign2, logabs2] = orbs.log_slater(swapped);
  EXPECT_TRUE(torch::allclose(logabs, logabs2, 1e-12, 1e-12));
  EXPECT_TRUE(torch::equal(sign, -sign2));
}

TEST(HartreeFockOrbitals, LogSlaterMatchesSlogdetAndASingularMatrixIsANodeNotAnError) {
  const System s = load_molecule("li", scftest::kMolecules);
  const BasisSet basis = make_basis("cc-pvdz", s);
  const auto orbs = occupied_orbitals(run_uhf(s, basis), basis);
  torch::Tensor r = random_positions(4, 3, 1.5, 13);
  const auto [up, down] = orbs.matrices(r);
  const auto [sign, logabs] = orbs.log_slater(r);
  const auto [s_up, l_up] = torch::linalg_slogdet(up);
  EXPECT_TRUE(torch::allclose(logabs, l_up + down.reshape({4}).abs().log(), 1e-12, 1e-12));
  EXPECT_TRUE(torch::equal(sign, s_up * down.reshape({4}).sign()));
  // Walker 2: both α electrons at one point, an exactly singular α matrix.
  r[2][1] = r[2][0];
  const auto [sign_s, logabs_s] = orbs.log_slater(r);
  EXPECT_EQ(sign_s[2].item<double>(), 0.0);
  EXPECT_EQ(logabs_s[2].item<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(torch::isfinite(logabs_s.index({torch::tensor({0, 1, 3})})).all().item<bool>());
}

// ∇²log|D| by reverse-over-reverse autograd, one second derivative per coordinate. [B]
torch::Tensor autograd_laplacian(const HartreeFockOrbitals& orbs, const torch::Tensor& r0) {
  const torch::Tensor r = r0.detach().requires_grad_(true);
  const auto logabs = orbs.log_slater(r).second;
  const auto g = torch::autograd::grad({logabs.sum()}, {r}, {}, true, true)[0].reshape({r.size(0), -1});
  auto lap = torch::zeros({r.size(0)}, r.options().requires_grad(false));
  for (int64_t i = 0; i < g.size(1); ++i) {
    const auto h = torch::autograd::grad({g.select(1, i).sum()}, {r}, {}, true)[0].reshape({r.size(0), -1});
    lap = lap + h.select(1, i).detach();
  }
  return lap;
}

// log_slater's float32 second derivatives (through the pivoted LU) stay at float32 rounding of
// the kinetic terms on methane walkers (measured 1.9e-5). For these Hartree-Fock matrices
// torch::linalg_slogdet measured the same (2.6e-5; CH4, H2O, C2H6 in STO-3G and cc-pVDZ agree
// within 2×), unlike in the ansatz (Laplacian.Float32AutogradMethodsMatchFloat64OnMethaneWalkers).
TEST(HartreeFockOrbitals, Float32LaplacianOfTheLogSlaterMatchesFloat64OnMethaneWalkers) {
  const System s = load_molecule("ch4", scftest::kMolecules);
  const BasisSet basis = make_basis("sto-3g", s);
  const ScfResult hf = run_rhf(s, basis);
  const auto o64 = occupied_orbitals(hf, basis, torch::kFloat64);
  const auto o32 = occupied_orbitals(hf, basis, torch::kFloat32);
  const torch::Tensor r = random_positions(24, 10, 1.2, 5);
  const auto ref = autograd_laplacian(o64, r);
  const auto lap32 = autograd_laplacian(o32, r.to(torch::kFloat32)).to(torch::kFloat64);
  const torch::Tensor rg = r.detach().requires_grad_(true);
  const auto g = torch::autograd::grad({o64.log_slater(rg).second.sum()}, {rg})[0];
  const auto scale = ref.abs() + g.square().sum({1, 2});  // the kinetic terms' size
  EXPECT_LT(((lap32 - ref).abs() / scale).max().item<double>(), 1e-3);
}

TEST(HartreeFockOrbitals, AnEmptySpinChannelContributesOne) {
  // H atom: one α electron, no β electron; ψ = φ_1s(r) for every basis including d shells.
  const System h = load_molecule("h", scftest::kMolecules);
  const BasisSet basis = make_basis("cc-pvtz", h);
  const auto orbs = occupied_orbitals(run_uhf(h, basis), basis);
  ASSERT_EQ(orbs.n_beta, 0);
  const torch::Tensor r = random_positions(3, 1, 1.0, 5);
  const auto [up, down] = orbs.matrices(r);
  EXPECT_EQ(down.sizes(), (std::vector<int64_t>{3, 0, 0}));
  const auto [sign, logabs] = orbs.log_slater(r);
  EXPECT_TRUE(torch::allclose(logabs, up.reshape({3}).abs().log(), 1e-12, 1e-12));
  EXPECT_TRUE(torch::equal(sign, up.reshape({3}).sign()));
}
