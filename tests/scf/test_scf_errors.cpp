/// Bad input and non-convergence give typed errors with clear messages.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/scf.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

namespace {
/// Runs f, expects an exception of type E whose message contains every word in `words`.
template <class E, class F>
void expect_error(F&& f, std::initializer_list<std::string> words) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(ScfErrors, UnknownBasisIsAnInputErrorListingTheAvailableOnes) {
  const System s = load_molecule("h2", scftest::kMolecules);
  expect_error<InputError>([&] { make_basis("def2-qzvppd", s); }, {"unknown basis", "def2-qzvppd", "cc-pVDZ, cc-pVQZ", "6-31G*"});
}

TEST(ScfErrors, ElementMissingFromBasisIsAnInputErrorNamingTheElement) {
  const System k = parse_molecule_yaml("[[K, 0, 0, 0], [H, 0, 0, 4.0]]", "test");
  expect_error<InputError>([&] { make_basis("cc-pvdz", k); }, {"cc-pvdz", "element K"});
}

TEST(ScfErrors, RhfWithOddElectronCountIsAnInputError) {
  System h = load_molecule("h", scftest::kMolecules);
  const BasisSet b = make_basis("sto-3g", h);
  expect_error<InputError>([&] { run_rhf(h, b); }, {"RHF", "closed-shell", "1 electron and", "UHF"});
}

TEST(ScfErrors, NonConvergenceIsANumericalErrorNotAHang) {
  const System s = load_molecule("h2o", scftest::kMolecules);
  const BasisSet b = make_basis("cc-pvdz", s);
  ScfOptions o;
  o.max_iterations = 3;
  expect_error<NumericalError>([&] { run_rhf(s, b, o); }, {"did not converge", "3 iterations"});
  o.throw_on_failure = false;
  const ScfResult r = run_rhf(s, b, o);
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.iterations, 3);
}

TEST(ScfErrors, InvalidOptionsAreInputErrors) {
  const System s = load_molecule("h2", scftest::kMolecules);
  const BasisSet b = make_basis("sto-3g", s);
  ScfOptions o;
  o.damping = 1.5;
  expect_error<InputError>([&] { run_rhf(s, b, o); }, {"damping"});
  o.damping = 0.3;  // DIIS from iteration 1 (the default): damping would never act
  expect_error<InputError>([&] { run_rhf(s, b, o); }, {"--damping", "--diis-start"});
}

// Damping acts before DIIS starts and changes the path, not the solution.
TEST(ScfErrors, DampingBeforeALaterDiisStartConvergesToTheSameEnergy) {
  const System s = load_molecule("h2o", scftest::kMolecules);
  const BasisSet b = make_basis("sto-3g", s);
  const ScfResult plain = run_rhf(s, b, ScfOptions{});
  ScfOptions o;
  o.damping = 0.5;
  o.diis_start = 6;
  const ScfResult damped = run_rhf(s, b, o);
  EXPECT_TRUE(damped.converged);
  EXPECT_NEAR(damped.energy, plain.energy, 1e-9);
  o.damping = 0;
  const ScfResult undamped = run_rhf(s, b, o);  // same DIIS start, no damping: another path
  EXPECT_NE(damped.iterations, undamped.iterations);
}
