#include <gtest/gtest.h>

#include "core/elements.hpp"
#include "core/errors.hpp"
#include "core/system.hpp"

using namespace nnvmc;

namespace {
const std::string kMolecules = std::string(NNVMC_SOURCE_DIR) + "/configs/molecules";
}

TEST(Elements, SymbolsRoundTripAndUnknownIsAnError) {
  EXPECT_EQ(atomic_number("H"), 1);
  EXPECT_EQ(atomic_number("li"), 3);
  EXPECT_EQ(atomic_number("Ar"), 18);
  EXPECT_EQ(element_symbol(6), "C");
  EXPECT_THROW(atomic_number("Xx"), InputError);
}

TEST(System, LiHHasFourElectronsAndKnownNuclearRepulsion) {
  const System s = load_molecule("lih", kMolecules);
  EXPECT_EQ(s.n_electrons(), 4);
  EXPECT_EQ(s.n_up(), 2);
  EXPECT_EQ(s.n_down(), 2);
  EXPECT_NEAR(s.nuclear_repulsion(), 3.0 / 3.015, 1e-12);
}

TEST(System, AngstromFilesAreConvertedToBohr) {
  // Reference e_nuc from ../shared/reference/ccsd.csv (Psi4).
  EXPECT_NEAR(load_molecule("h2o", kMolecules).nuclear_repulsion(), 9.188258413405, 1e-8);
  EXPECT_NEAR(load_molecule("c4h4", kMolecules).nuclear_repulsion(), 98.516605115820, 1e-8);
}

TEST(System, SpinParityAndRangeAreChecked) {
  System s = parse_molecule_yaml("[[H, 0, 0, 0]]", "inline");
  s.spin = 0;
  EXPECT_THROW(s.validate(), InputError);  // one electron, spin 0: wrong parity
  s.spin = 1;
  EXPECT_NO_THROW(s.validate());
  s.spin = 3;
  EXPECT_THROW(s.validate(), InputError);  // more spin than electrons
  s.spin = 1;
  s.charge = 1;
  EXPECT_THROW(s.validate(), InputError);  // no electrons left
}

TEST(System, UnknownElementNamesTheLine) {
  try {
    parse_molecule_yaml("units: bohr\natoms:\n  - [H, 0, 0, 0]\n  - [Qq, 0, 0, 1]\n", "m.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.yaml:4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Qq"), std::string::npos) << e.what();
  }
}

TEST(System, MissingFileAndUnknownNameAreErrors) {
  EXPECT_THROW(load_molecule("nosuchmolecule", kMolecules), InputError);
  EXPECT_THROW(load_molecule("/nonexistent/x.xyz", kMolecules), InputError);
}
