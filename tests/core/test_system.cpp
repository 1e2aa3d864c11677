#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/elements.hpp"
#include "common/text.hpp"
#include "core/errors.hpp"
#include "core/system.hpp"

using namespace nnvmc;
using test::contains;

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

// The lower bound is exact for hydrogen and fills hydrogen-like shells of the total nuclear
// charge per spin otherwise; every shipped molecule's best known energy lies above it.
TEST(System, EnergyLowerBoundIsExactForHydrogenAndBelowEveryReference) {
  EXPECT_DOUBLE_EQ(load_molecule("h", kMolecules).energy_lower_bound(), -0.5);
  EXPECT_DOUBLE_EQ(load_molecule("he", kMolecules).energy_lower_bound(), -4.0);  // 2 × (−Z²/2), Z = 2
  // Li: Z = 3, two up electrons in shells n = 1, 2 and one down: −4.5 − 1.125 − 4.5
  EXPECT_DOUBLE_EQ(load_molecule("li", kMolecules).energy_lower_bound(), -10.125);
  const System h2 = load_molecule("h2", kMolecules);
  EXPECT_NEAR(h2.energy_lower_bound(), -4.0 + h2.nuclear_repulsion(), 1e-12);
  for (const char* name : {"h", "he", "li", "h2", "lih", "n2", "ch4", "c4h4"}) {  // (h2o, c2h6: no e_ref)
    const System s = load_molecule(name, kMolecules);
    ASSERT_TRUE(s.e_ref.has_value()) << name;
    EXPECT_LE(s.energy_lower_bound(), *s.e_ref) << name;
  }
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

// ---- Hostile input: one test per row of issue 18's catalogue (molecule side). ----

namespace {
std::string molecule_error(const std::string& yaml) {
  try {
    parse_molecule_yaml(yaml, "m.yaml").validate();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
std::string xyz_error(const std::string& text, int frame = 0) {
  try {
    parse_xyz(text, "m.xyz", frame).validate();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Hostile, OverlappingNucleiAreRejected) {
  EXPECT_TRUE(contains(molecule_error("[[H, 0, 0, 0], [H, 0, 0, 5e-7]]"), "coincide")) << molecule_error("[[H, 0, 0, 0], [H, 0, 0, 5e-7]]");
  EXPECT_EQ(molecule_error("[[H, 0, 0, 0], [H, 0, 0, 2e-6]]"), "");  // close but distinct: allowed
}

// Nuclei closer than any bond (0.7 × the covalent radii's sum) are allowed, with a warning that
// names the pair; ångström coordinates read as bohr (0.53 × each distance) are caught by it,
// equilibrium geometries (shortest: N≡N, 0.77 × the sum) and the shipped molecules are not.
TEST(Geometry, NucleiCloserThanAnyBondAreNamedInAWarningAndRealMoleculesAreNot) {
  const auto molecule = [](const std::string& yaml) { return parse_molecule_yaml(yaml, "m.yaml"); };
  const std::string w = molecule("{atoms: [[O, 0, 0, 0], [H, 0, 0, 1.0], [H, 0, 1.8, 0]]}").short_distance_warning();
  EXPECT_NE(w.find("atoms 0 (O) and 1 (H) are 1 bohr (0.5292 angstrom) apart, 0.55 of their covalent radii's sum"),
            std::string::npos) << w;
  EXPECT_NE(w.find("'units: angstrom'"), std::string::npos) << w;
  EXPECT_NE(molecule("{atoms: [[H, 0, 0, 0], [H, 0, 0, 2e-6]]}").short_distance_warning(), "");
  // water in angstrom without 'units': every O-H distance at 0.53 of a bond
  EXPECT_NE(molecule("{atoms: [[O, 0, 0, 0.1173], [H, 0, 0.7572, -0.4692], [H, 0, -0.7572, -0.4692]]}")
                .short_distance_warning(), "");
  // H2 in angstrom without 'units' (its bond at 0.63 of the sum)
  EXPECT_NE(molecule("{atoms: [[H, 0, 0, 0], [H, 0, 0, 0.7414]]}").short_distance_warning(), "");
  // an XYZ file is read in angstrom: no advice to add units
  const std::string xyz = parse_xyz("2\n\nH 0 0 0\nH 0 0 0.3\n", "m.xyz").short_distance_warning();
  EXPECT_NE(xyz.find("read in angstrom"), std::string::npos) << xyz;
  EXPECT_EQ(xyz.find("units"), std::string::npos) << xyz;
  EXPECT_EQ(molecule("{atoms: [[N, 0, 0, 0], [N, 0, 0, 2.074]]}").short_distance_warning(), "");  // N2 at r_e
  EXPECT_EQ(molecule("{atoms: [[H, 0, 0, 0], [H, 0, 0, 1.4]]}").short_distance_warning(), "");
  for (const char* name : {"h2", "lih", "ch4", "c2h6", "c4h4", "n2", "h2o"})
    EXPECT_EQ(load_molecule(name, kMolecules).short_distance_warning(), "") << name;
}

TEST(Hostile, ImpossibleChargeAndSpinAreRejectedWithoutOverflow) {
  EXPECT_TRUE(contains(molecule_error("{charge: 2, atoms: [[H, 0, 0, 0]]}"), "electrons"));
  EXPECT_TRUE(contains(molecule_error("{charge: -5, atoms: [[H, 0, 0, 0]]}"), "charge -5"));
  EXPECT_TRUE(contains(molecule_error("{charge: -2147483648, atoms: [[H, 0, 0, 0]]}"), "charge"));
  EXPECT_TRUE(contains(molecule_error("{charge: 2147483647, atoms: [[H, 0, 0, 0]]}"), "charge"));
  EXPECT_TRUE(contains(molecule_error("{spin: -2147483648, atoms: [[He, 0, 0, 0]]}"), "spin"));
  EXPECT_TRUE(contains(molecule_error("{spin: 2147483647, atoms: [[He, 0, 0, 0]]}"), "spin"));
  EXPECT_TRUE(contains(molecule_error("{charge: 1e20, atoms: [[He, 0, 0, 0]]}"), "integers"));
}

TEST(Hostile, EmptyAtomListsAreRejected) {
  EXPECT_TRUE(contains(molecule_error("[]"), "no atoms"));
  EXPECT_TRUE(contains(molecule_error("{atoms: []}"), "no atoms"));
  EXPECT_TRUE(contains(molecule_error("{atoms: }"), "'atoms' must be a list"));
  EXPECT_TRUE(contains(molecule_error("{units: bohr}"), "missing 'atoms'"));
  EXPECT_TRUE(contains(molecule_error(""), "must be a list"));
}

TEST(Hostile, NonFiniteOrAbsurdCoordinatesAreRejectedWithTheirLine) {
  for (const char* v : {".nan", ".inf", "-.inf", "1e300"}) {
    const auto e = molecule_error(std::string("atoms:\n  - [H, 0, 0, 0]\n  - [H, 0, ") + v + ", 1]\n");
    EXPECT_TRUE(contains(e, "m.yaml:3")) << v << ": " << e;
    EXPECT_TRUE(contains(e, "coordinate")) << v << ": " << e;
  }
  for (const char* v : {"nan", "inf", "1e999", "1e300", "abc"}) {
    const auto e = xyz_error(std::string("2\ncomment\nH 0 0 0\nH 0 ") + v + " 1\n");
    EXPECT_TRUE(contains(e, "m.xyz:4")) << v << ": " << e;
  }
}

TEST(Hostile, XyzAtomCountsMustMatchTheAtomLines) {
  EXPECT_EQ(xyz_error("2\nH2\nH 0 0 0\nH 0 0 0.74\n"), "");
  EXPECT_EQ(xyz_error("2\nH2\nH 0 0 0\nH 0 0 0.74\n\n2\nnext frame\nH 0 0 0\nH 0 0 0.8\n"), "");  // 2 frames
  EXPECT_TRUE(contains(xyz_error("3\nH2\nH 0 0 0\nH 0 0 0.74\n"), "declares 3 atoms, the file has 2"));
  EXPECT_TRUE(contains(xyz_error("1\nH2\nH 0 0 0\nH 0 0 0.74\n"), "m.xyz:4: the first line declares 1 atoms"));
  EXPECT_TRUE(contains(xyz_error("two\nH2\nH 0 0 0\n"), "m.xyz:1"));
  EXPECT_TRUE(contains(xyz_error("0\n\n"), "m.xyz:1"));
  EXPECT_TRUE(contains(xyz_error("-3\n\n"), "m.xyz:1"));
  EXPECT_TRUE(contains(xyz_error("2 atoms\nH2\nH 0 0 0\nH 0 0 0.74\n"), "m.xyz:1"));
  EXPECT_TRUE(contains(xyz_error(""), "m.xyz:1"));
  EXPECT_TRUE(contains(xyz_error("1\nX\nXx 0 0 0\n"), "m.xyz:3"));
  EXPECT_TRUE(contains(xyz_error("1\nX\nH 0 0\n"), "m.xyz:3"));
}

// A multi-frame XYZ file (a trajectory, or ../shared/reference/water_clusters.xyz) gives any
// frame by FILE.xyz@K (from 0, -1 the last, as ASE writes it); each frame is checked, and a frame
// that is not there is an error counting the frames.
TEST(System, AnyFrameOfAMultiFrameXyzIsChosenByItsIndex) {
  const std::string two = "2\nH2\nH 0 0 0\nH 0 0 0.74\n\n3\nwater\nO 0 0 0\nH 0 0.757 0.587\nH 0 -0.757 0.587\n";
  EXPECT_EQ(parse_xyz(two, "m.xyz").atoms.size(), 2u);
  EXPECT_EQ(parse_xyz(two, "m.xyz", 1).atoms.size(), 3u);
  EXPECT_EQ(parse_xyz(two, "m.xyz", -1).atoms.size(), 3u);
  EXPECT_EQ(parse_xyz(two, "m.xyz", -2).atoms.size(), 2u);
  EXPECT_TRUE(contains(xyz_error(two, 2), "m.xyz: no frame 2 (the file has 2 frames: 0 to 1"));
  EXPECT_TRUE(contains(xyz_error("1\nH\nH 0 0 0\n", 1), "no frame 1 (the file has 1 frame: 0)"));
  // a later frame's errors name its lines
  EXPECT_TRUE(contains(xyz_error(two + "2\nbad\nH 0 0 0\n"), "m.xyz: line 11 declares 2 atoms, the file has 1 after it"));
  EXPECT_TRUE(contains(xyz_error(two + "1\nbad\nH 0 zero 0\n"), "m.xyz:13: coordinate 'zero'"));

  const auto dir = std::filesystem::temp_directory_path() / "nnvmc_test_frames";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "traj.xyz") << two;
  std::ofstream(dir / "traj.XYZ") << two;
  const System water = load_molecule((dir / "traj.xyz").string() + "@1", "unused");
  EXPECT_EQ(water.atoms.size(), 3u);
  EXPECT_EQ(water.name, "traj@1");
  EXPECT_EQ(load_molecule((dir / "traj.xyz").string(), "unused").name, "traj");
  // named by the frame's own number: @-1 of two frames is traj@1, as @1 is
  EXPECT_EQ(load_molecule((dir / "traj.XYZ").string() + "@-1", "unused").name, "traj@1") << "(case of .XYZ)";
  EXPECT_EQ(load_molecule((dir / "traj.xyz").string() + "@-2", "unused").name, "traj@0");
  // how scf and ccsd name it: the frame a negative index picked is said (the header said "@-1" alone)
  const std::string last = (dir / "traj.xyz").string() + "@-1", first = (dir / "traj.xyz").string() + "@0";
  int frame = 7;
  EXPECT_EQ(molecule_spec_label(last, load_molecule(last, "unused"), &frame), last + " (frame 1)");
  EXPECT_EQ(frame, 1);
  EXPECT_EQ(molecule_spec_label(first, load_molecule(first, "unused"), &frame), first);
  EXPECT_EQ(frame, 0);
  EXPECT_EQ(molecule_spec_label((dir / "traj.xyz").string(), water, &frame), (dir / "traj.xyz").string());
  EXPECT_EQ(frame, -1);
  for (const char* bad : {"@x", "@", "@1.5"})
    EXPECT_THROW(load_molecule((dir / "traj.xyz").string() + bad, "unused"), InputError) << bad;
  EXPECT_THROW(load_molecule((dir / "traj.xyz").string() + "@7", "unused"), InputError);
  std::filesystem::remove_all(dir);
}

// Each coordinate is read whole: a decimal comma, a typo or a trailing word used to be read as
// far as it parsed (1,25 gave 1 angstrom) and the rest taken for an extra column. A Fortran
// exponent is read; columns after z are still allowed.
TEST(Hostile, XyzCoordinatesAreReadWholeOrRefusedWithTheirLine) {
  for (const char* v : {"1,25", "0.74abc", "0.7.4", "1.4.", "0x1p-1", "1D"}) {
    const auto e = xyz_error(std::string("2\nH2\nH 0 0 0\nH 0 0 ") + v + "\n");
    EXPECT_TRUE(contains(e, "m.xyz:4: coordinate '")) << v << ": " << e;
  }
  EXPECT_DOUBLE_EQ(parse_xyz("2\nH2\nH 0 0 0\nH 0 0 0.74D0\n", "m.xyz").atoms[1].position[2], 0.74 * kBohrPerAngstrom);
  EXPECT_DOUBLE_EQ(parse_xyz("2\nH2\nH 0 0 0\nH 0 0 7.4d-1 0.5 extra\n", "m.xyz").atoms[1].position[2],
                   0.74 * kBohrPerAngstrom);
}

// An .xyz says nothing of charge and spin: neutral, lowest spin (an H atom was refused for
// "spin 0 has the wrong parity"). Atomic numbers stand for symbols; a byte-order mark is skipped.
TEST(System, XyzFilesTakeTheLowestSpinAtomicNumbersAndAByteOrderMark) {
  const System h = parse_xyz("1\nH atom\nH 0 0 0\n", "h.xyz");
  EXPECT_EQ(h.spin, 1);
  EXPECT_FALSE(h.spin_given);
  EXPECT_EQ(h.source_units, "angstrom");
  EXPECT_NO_THROW(h.validate());
  const System water = parse_xyz("\xEF\xBB\xBF" "3\nwater\n8 0 0 0\n1 0 0.757 0.587\nH 0 -0.757 0.587\n", "w.xyz");
  ASSERT_EQ(water.atoms.size(), 3u);
  EXPECT_EQ(water.atoms[0].Z, 8);
  EXPECT_EQ(water.atoms[1].Z, 1);
  EXPECT_EQ(water.spin, 0);
  EXPECT_EQ(atomic_number("36"), 36);
  EXPECT_THROW(atomic_number("0"), InputError);
  EXPECT_THROW(atomic_number("37"), InputError);
  // units in any case
  EXPECT_DOUBLE_EQ(parse_molecule_yaml("{units: Angstrom, atoms: [[H, 0, 0, 1]]}", "m.yaml").atoms[0].position[2],
                   kBohrPerAngstrom);
  EXPECT_TRUE(contains(molecule_error("{units: nm, atoms: [[H, 0, 0, 1]]}"), "must be bohr or angstrom"));
}

TEST(Hostile, MalformedMoleculeYamlIsAnInputErrorNamingTheLine) {
  EXPECT_TRUE(contains(molecule_error("atoms: [[H, 0, 0, 0]\n"), "malformed YAML"));
  EXPECT_TRUE(contains(molecule_error("{[1]: 2, atoms: [[H, 0, 0, 0]]}"), "plain names"));
  EXPECT_TRUE(contains(molecule_error("{colour: red, atoms: [[H, 0, 0, 0]]}"), "unknown molecule key 'colour'"));
  EXPECT_TRUE(contains(molecule_error("atoms:\n  - [H, 0, 0]\n"), "m.yaml:2"));
  EXPECT_TRUE(contains(molecule_error("atoms:\n  - [{a: 1}, 0, 0, 0]\n"), "m.yaml:2"));
}
