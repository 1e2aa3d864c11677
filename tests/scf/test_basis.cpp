/// Basis files: parsing, lookup, sizes.
#include <gtest/gtest.h>

#include <filesystem>

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

// A BASIS line that says neither SPHERICAL nor CARTESIAN means Cartesian, as in NWChem, with a
// warning where it matters (d shells) (a user audit: read as pure, 0.34 mEh off for H2O/cc-pVDZ).
TEST(BasisFile, NeitherSphericalNorCartesianIsNWChemsCartesianWithAWarning) {
  const std::string d_shell = "O D\n 1.0 1.0\nEND\n";
  testing::internal::CaptureStdout();  // (the log's sink: stdout in tests)
  testing::internal::CaptureStderr();
  const auto plain = parse_nwchem_basis("BASIS \"ao basis\" PRINT\n" + d_shell, "plain.nw");
  const auto s_only = parse_nwchem_basis("BASIS\nH S\n 1.0 1.0\nEND\n", "s_only.nw");
  const auto pure = parse_nwchem_basis("BASIS \"ao basis\" SPHERICAL\n" + d_shell, "pure.nw");
  const std::string log = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  EXPECT_FALSE(plain.spherical);
  EXPECT_TRUE(pure.spherical);
  EXPECT_NE(log.find("plain.nw: its BASIS line says neither SPHERICAL nor CARTESIAN"), std::string::npos) << log;
  EXPECT_EQ(log.find("s_only.nw"), std::string::npos) << log;  // (no d shells: nothing to say)
  EXPECT_EQ(log.find("pure.nw"), std::string::npos) << log;
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
  // finite exponents no basis set has (they made the SCF's Fock matrix non-finite, naming no line)
  for (const char* bad : {" 1e300 1.0", " 1e-300 1.0"}) {
    try {
      parse_nwchem_basis(std::string("BASIS\nH S\n 2.0 0.5\n") + bad + "\nEND\n", "bad.nw");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.nw:4: exponent 1e"), std::string::npos) << e.what();
    }
  }
  try {  // an unknown element names its line too
    parse_nwchem_basis("BASIS\nH S\n 2.0 0.5\nXq S\n 1.0 1.0\nEND\n", "bad.nw");
    ADD_FAILURE() << "unknown element accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.nw:4: unknown element 'Xq'"), std::string::npos) << e.what();
  }
}

// Two basis sets pasted into one file gave an element its shells twice (a doubled, linearly
// dependent basis); each element's shells must be one run of blocks, as basis-set files list them.
TEST(BasisFile, AnElementWhoseShellsComeBackLaterIsRefusedNamingBothLines) {
  const std::string h = "H S\n 2.0 0.5\n 0.5 0.5\nH P\n 1.0 1.0\n";
  const std::string he = "He S\n 3.0 1.0\n";
  EXPECT_EQ(parse_nwchem_basis("BASIS\n" + h + he + "END\n", "ok.nw").elements.at(1).size(), 2u);
  for (const std::string& twice : {"BASIS\n" + h + he + h + "END\n", "BASIS\n" + h + "END\nBASIS\n" + h + "END\n"}) {
    try {
      parse_nwchem_basis(twice, "two.nw");
      ADD_FAILURE() << twice;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("two.nw:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("H has shells from line 2 already"), std::string::npos) << e.what();
      const bool second_section = twice.find("END\nBASIS") != std::string::npos;
      EXPECT_NE(std::string(e.what()).find(second_section ? "in an earlier BASIS section" : "before another element's"),
                std::string::npos)
          << e.what();
    }
  }
}

// A contraction whose coefficients are all zero used to vanish without a word (one function
// fewer than the file's author meant); a shell type past libint2's ERI limit (I, K) used to
// fail later inside the integral engine as "Engine::lmax_exceeded".
TEST(BasisFile, AnAllZeroContractionAndAShellTypeBeyondTheIntegralLimitNameTheirLine) {
  try {
    parse_nwchem_basis("BASIS\nH S\n 2.0 0.5 0.0\n 1.0 0.5 0.0\nEND\n", "zero.nw");
    ADD_FAILURE() << "all-zero contraction accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("zero.nw:2: contraction 2 of the shell has only zero coefficients"),
              std::string::npos) << e.what();
  }
  for (const char* label : {"I", "K"}) {
    try {
      parse_nwchem_basis(std::string("BASIS\nH S\n 2.0 0.5\nH ") + label + "\n 1.0 1.0\nEND\n", "high.nw");
      ADD_FAILURE() << label << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("high.nw:4: shell type '" + std::string(label) + "'"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("beyond the integral library's limit, l = 5"), std::string::npos) << e.what();
    }
  }
  // H (l = 5) is the highest the integrals take, and is read
  EXPECT_EQ(parse_nwchem_basis("BASIS\nH H\n 1.0 1.0\nEND\n", "h.nw").elements.at(1).front().l, 5);
}

// --basis my.nw (or any path with a '/') reads that file instead of a shipped basis: the same
// functions as the shipped file it copies; a missing file is named as such.
TEST(Basis, AFilePathIsReadAsABasisFile) {
  EXPECT_TRUE(is_basis_path("my.nw"));
  EXPECT_TRUE(is_basis_path("dir/basis"));
  EXPECT_FALSE(is_basis_path("cc-pVDZ"));
  EXPECT_FALSE(is_basis_path("6-31G*"));
  const System s = load_molecule("h2o", scftest::kMolecules);
  const std::string copy = (std::filesystem::temp_directory_path() / "nnvmc_test_basis_copy.NW").string();
  std::filesystem::copy_file(default_basis_dir() + "/cc-pvdz.nw", copy,
                             std::filesystem::copy_options::overwrite_existing);
  const BasisSet shipped = make_basis("cc-pvdz", s), from_file = make_basis(copy, s);
  EXPECT_EQ(from_file.n_functions(), shipped.n_functions());
  EXPECT_EQ(from_file.n_shells(), shipped.n_shells());
  std::filesystem::remove(copy);
  try {
    (void)make_basis("no/such/basis.nw", s);
    ADD_FAILURE() << "missing file accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("basis file 'no/such/basis.nw' not found"), std::string::npos) << e.what();
  }
  // a path that is there but is no file is not called missing (a user audit)
  try {
    (void)make_basis(std::filesystem::temp_directory_path().string() + "/", s);
    ADD_FAILURE() << "a directory accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a regular file (a directory or device?)"), std::string::npos) << e.what();
  }
}

TEST(Basis, NamesMapToFilesCaseInsensitively) {
  EXPECT_EQ(basis_file_name("6-31G*"), "6-31gs.nw");
  EXPECT_EQ(basis_file_name("cc-pVDZ"), "cc-pvdz.nw");
  EXPECT_EQ(basis_file_name("6-31+G*"), "6-31pgs.nw");
  EXPECT_EQ(basis_file_name("def2-SVP"), "def2-svp.nw");
}

// Papers and Gaussian write the polarization functions in parentheses.
TEST(Basis, ParenthesizedPolarizationNamesTheStarredBasis) {
  EXPECT_EQ(basis_file_name("6-31G(d)"), "6-31gs.nw");
  EXPECT_EQ(basis_file_name("6-31G(d,p)"), "6-31gss.nw");
  EXPECT_EQ(basis_file_name("6-31G*(d)"), "6-31gs(d).nw");  // stars and parentheses: no basis (was 6-31G**)
  EXPECT_EQ(basis_file_name("6-311G(D,P)"), "6-311gss.nw");
  EXPECT_EQ(basis_file_name("6-31G(d, p)"), "6-31gss.nw");
  EXPECT_EQ(basis_file_name("6-31+G(d)"), "6-31pgs.nw");
  const System s = load_molecule("h2o", scftest::kMolecules);
  EXPECT_EQ(make_basis("6-31G(d,p)", s).n_functions(), make_basis("6-31G**", s).n_functions());
}

// The list an unknown basis's error (and --basis --help) shows spells the names as chemists do,
// and each of them finds its file.
TEST(Basis, AvailableNamesAreTheConventionalSpellingsAndEachLoads) {
  const auto names = available_bases(default_basis_dir());
  for (const char* b : {"STO-3G", "STO-6G", "6-31G", "6-31G*", "6-31G**", "6-31+G*", "6-311G", "6-311G**", "cc-pVDZ",
                        "cc-pVTZ", "cc-pVQZ", "aug-cc-pVDZ", "aug-cc-pVTZ", "def2-SVP", "def2-TZVP"})
    EXPECT_NE(std::find(names.begin(), names.end(), b), names.end()) << b;
  for (const auto& n : names)
    EXPECT_TRUE(std::filesystem::exists(default_basis_dir() + "/" + basis_file_name(n))) << n;
}

TEST(Basis, EveryShippedBasisCoversHydrogenToArgon) {
  for (const auto& b : available_bases(default_basis_dir()))
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
