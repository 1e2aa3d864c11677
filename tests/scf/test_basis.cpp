/// Basis files: parsing, lookup, sizes.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/basis_file.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

TEST(BasisFile, SpShellsSplitIntoSAndP) {
  const auto lib = parse_nwchem_basis(R"(BASIS "ao basis" CARTESIAN PRINT
Li    SP
      0.2324918408E+01      -0.3509174574E-01       0.8941508043E-02
      0.6324303556E+00      -0.1912328431E+00       0.1410094640E+00
END
)", "test");
  EXPECT_FALSE(lib.spherical);
  const auto& li = lib.elements.at(3);
  ASSERT_EQ(li.size(), 2u);
  EXPECT_EQ(li[0].l, 0);
  EXPECT_EQ(li[1].l, 1);
  EXPECT_DOUBLE_EQ(li[1].coefficients[1], 0.1410094640);
  EXPECT_DOUBLE_EQ(li[0].exponents[0], 2.324918408);
}

TEST(BasisFile, GeneralContractionsBecomeSegmentedShellsWithoutZeroCoefficients) {
  const auto lib = parse_nwchem_basis(R"(BASIS "ao basis" SPHERICAL PRINT
H    S
      1.301000E+01           1.968500E-02           0.000000E+00
      1.220000E-01           5.012400E-01           1.000000E+00
END
)", "test");
  EXPECT_TRUE(lib.spherical);
  const auto& h = lib.elements.at(1);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].exponents.size(), 2u);
  ASSERT_EQ(h[1].exponents.size(), 1u);
  EXPECT_DOUBLE_EQ(h[1].exponents[0], 0.122);
}

TEST(BasisFile, MalformedLinesNameTheLine) {
  try {
    parse_nwchem_basis("BASIS \"ao basis\" SPHERICAL\nH S\n 1.0 abc\nEND\n", "bad.nw");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.nw:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_nwchem_basis("BASIS\nH Q\n 1.0 1.0\nEND\n", "bad.nw"), InputError);
  // nan and inf parse as numbers but are not exponents or coefficients (a NaN exponent gave a
  // failed SCF with NaN energies instead of naming the line).
  for (const char* bad : {" nan 1.0", " 1.0 inf", " 0.5D+400 1.0"}) {
    try {
      parse_nwchem_basis(std::string("BASIS\nH S\n 2.0 0.5\n") + bad + "\nEND\n", "bad.nw");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.nw:4: not a finite number"), std::string::npos) << e.what();
    }
  }
  try {  // an unknown element names its line too
    parse_nwchem_basis("BASIS\nH S\n 2.0 0.5\nXq S\n 1.0 1.0\nEND\n", "bad.nw");
    ADD_FAILURE() << "unknown element accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.nw:4: unknown element 'Xq'"), std::string::npos) << e.what();
  }
}

TEST(Basis, NamesMapToFilesCaseInsensitively) {
  EXPECT_EQ(basis_file_name("6-31G*"), "6-31gs.nw");
  EXPECT_EQ(basis_file_name("cc-pVDZ"), "cc-pvdz.nw");
  const auto names = available_bases(default_basis_dir());
  for (const char* b : {"sto-3g", "sto-6g", "6-31g", "6-31gs", "cc-pvdz", "cc-pvtz"})
    EXPECT_NE(std::find(names.begin(), names.end(), b), names.end()) << b;
}

TEST(Basis, EveryShippedBasisCoversHydrogenToArgon) {
  for (const char* b : {"sto-3g", "sto-6g", "6-31g", "6-31g*", "cc-pvdz", "cc-pvtz"})
    for (int Z = 1; Z <= 18; ++Z) {
      System s;
      s.atoms = {Atom{Z, {0, 0, 0}}};
      EXPECT_GT(make_basis(b, s).n_functions(), 0u) << b << " Z=" << Z;
    }
}

TEST(Basis, FunctionCountsMatchTheReferenceTable) {
  // n_basis column of ../shared/reference/ccsd.csv (spherical cc-pVXZ).
  for (const auto& row : scftest::read_csv_rows(scftest::kReference + "/ccsd.csv")) {
    const System s = load_molecule(row[0], scftest::kMolecules);
    EXPECT_EQ(make_basis(row[1], s).n_functions(), std::stoul(row[2])) << row[0] << "/" << row[1];
  }
}

TEST(Basis, SixThirtyOneGStarHasCartesianD) {
  System c;
  c.atoms = {Atom{6, {0, 0, 0}}};
  EXPECT_EQ(make_basis("6-31G*", c).n_functions(), 15u);  // 3s 2p ×3 + 6 Cartesian d
  BasisOptions pure;
  pure.spherical = true;
  EXPECT_EQ(make_basis("6-31G*", c, pure).n_functions(), 14u);
  EXPECT_EQ(make_basis("cc-pVTZ", c).n_functions(), 30u);  // 4s3p2d1f spherical
}

TEST(Basis, ShellOffsetsAndAtomsAreConsistent) {
  const System s = load_molecule("h2o", scftest::kMolecules);
  const BasisSet b = make_basis("cc-pvdz", s);
  ASSERT_EQ(b.shell_offsets().size(), b.n_shells() + 1);
  EXPECT_EQ(b.shell_offsets().back(), b.n_functions());
  for (std::size_t i = 0; i < b.n_shells(); ++i)
    EXPECT_EQ(b.shell_offsets()[i + 1] - b.shell_offsets()[i], b.shells()[i].size());
  EXPECT_EQ(b.shell_atoms().front(), 0);
  EXPECT_EQ(b.shell_atoms().back(), 2);
  EXPECT_EQ(b.max_l(), 2);
}
