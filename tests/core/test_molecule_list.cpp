/// The molecules of a run: system.molecule, system.molecules and system.dataset.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "core/config.hpp"
#include "common/text.hpp"
#include "core/errors.hpp"
#include "core/molecule_list.hpp"

using namespace nnvmc;
using test::contains;
namespace fs = std::filesystem;

namespace {
std::vector<System> molecules_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return resolve_molecules(parse_config(yaml, overrides, "c.yaml").system);
}
template <class E> std::string error_of(const std::string& yaml) {
  try {
    (void)molecules_of(yaml);
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(MoleculeList, OneMoleculeIsTheListOfLengthOneAndLihIsTheDefault) {
  const auto d = molecules_of("");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "lih");
  const auto h = molecules_of("system: {molecule: h2}");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].name, "h2");
  const auto inline_atoms = molecules_of("system: {molecule: [[H, 0, 0, 0], [H, 0, 0, 1.4]]}");
  EXPECT_EQ(inline_atoms[0].name, "inline");
}

// The file's reference energy belongs to its molecule wherever it lies: an entry that only moves
// or turns it (centred coordinates, another axis) keeps it; another bond length does not.
TEST(MoleculeList, AReferenceEnergyCarriesOverToAMovedOrTurnedMoleculeOnly) {
  const auto m = molecules_of(
      "system:\n"
      "  molecules:\n"
      "    - {molecule: h2, geometry: [[0, 0, -0.7], [0, 0, 0.7]], name: centred}\n"
      "    - {molecule: h2, geometry: [[1, 2, 3], [2.4, 2, 3]], name: turned}\n"
      "    - {molecule: h2, geometry: [[0, 0, -0.7], [0, 0, 0.7000001]], name: rounded}\n"
      "    - {molecule: h2, geometry: [[0, 0, 0], [0, 0, 1.41]], name: stretched}\n");
  ASSERT_EQ(m.size(), 4u);
  for (int i : {0, 1, 2}) {
    ASSERT_TRUE(m[i].e_ref.has_value()) << m[i].name;
    EXPECT_DOUBLE_EQ(*m[i].e_ref, -1.174475714);
  }
  EXPECT_FALSE(m[3].e_ref.has_value());
  EXPECT_TRUE(congruent(m[0], m[1]));
  EXPECT_FALSE(same_geometry(m[0], m[1]));
  EXPECT_FALSE(congruent(m[0], m[3]));
  // the same nuclei in another order are not the same entry (the atoms' order is the model's input order)
  System lih = molecules_of("system: {molecule: lih}")[0], hli = lih;
  std::swap(hli.atoms[0], hli.atoms[1]);
  EXPECT_FALSE(congruent(lih, hli));
}

// system.molecule is the list of length one: it takes an entry of a list too (it was read as a
// molecule name: "unknown molecule '{molecule: h, charge: -1}'", a user audit).
TEST(MoleculeList, SystemMoleculeTakesAnEntryAsSystemMoleculesDoes) {
  for (const auto& m : {molecules_of("system: {molecule: {molecule: h, charge: -1}}"),
                        molecules_of("", {"system.molecule={molecule: h, charge: -1}"})}) {
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].n_electrons(), 2);
    EXPECT_EQ(m[0].spin, 0);
    EXPECT_EQ(m[0].name, molecules_of("system: {molecules: [{molecule: h, charge: -1}]}")[0].name);
  }
  // a name or path holding the word is still a name or path
  EXPECT_THROW(molecules_of("system: {molecule: no_such_molecule}"), InputError);
  const std::string path = ::testing::TempDir() + "/nnvmc_my_molecule.yaml";
  std::ofstream(path) << "atoms: [[H, 0, 0, 0], [H, 0, 0, 1.4]]\n";
  const auto by_path = molecules_of("system: {molecule: " + path + "}");
  ASSERT_EQ(by_path.size(), 1u);
  EXPECT_EQ(by_path[0].n_electrons(), 2);
}

TEST(MoleculeList, EntriesAreNamesFilesAtomsOrMoleculesAtNewGeometriesWithUniqueNames) {
  const auto m = molecules_of(
      "system:\n"
      "  molecules:\n"
      "    - lih\n"
      "    - lih\n"
      "    - {molecule: h2, geometry: [[0, 0, 0], [0, 0, 1.0]], units: angstrom}\n"
      "    - {atoms: [[He, 0, 0, 0]], name: helium}\n"
      "    - [[H, 0, 0, 0], [H, 0, 0, 2.0]]\n"
      "    - {molecule: h2, name: energy}\n");
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].name, "lih");
  EXPECT_EQ(m[1].name, "lih_2");
  EXPECT_EQ(m[2].name, "h2");
  EXPECT_DOUBLE_EQ(m[2].atoms[1].position[2], kBohrPerAngstrom);
  EXPECT_FALSE(m[2].e_ref.has_value());  // the file's reference belongs to its own geometry
  EXPECT_TRUE(m[0].e_ref.has_value());
  EXPECT_EQ(m[3].name, "helium");
  EXPECT_EQ(m[3].n_electrons(), 2);
  EXPECT_EQ(m[4].name, "inline5");
  EXPECT_EQ(m[5].name, "energy_2");  // "energy" is a run-level series of result.h5
}

// A name given once is kept: a numbered repeat of another entry never takes it (the given he_2
// went to a second He, and `eval --molecule he_2` evaluated the wrong molecule).
TEST(MoleculeList, ANameGivenOnceIsNeverTakenByARepeatOfAnother) {
  const auto m = molecules_of("system: {molecules: [he, he, {molecule: h2, name: he_2}]}\n");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].name, "he");
  EXPECT_EQ(m[1].name, "he_3");
  EXPECT_EQ(m[2].name, "he_2");
  EXPECT_EQ(m[2].n_electrons(), 2);
  EXPECT_EQ(m[2].atoms.size(), 2u);  // the H2
  // names given twice keep them for their first entry; a name made usable never takes a given one
  EXPECT_EQ(unique_molecule_names({"he", "he", "he_2", "he_2"}),
            (std::vector<std::string>{"he", "he_3", "he_2", "he_2_2"}));
  EXPECT_EQ(unique_molecule_names({"a b", "a_b"}), (std::vector<std::string>{"a_b_2", "a_b"}));
  EXPECT_EQ(unique_molecule_names({"energy", "x y"}), (std::vector<std::string>{"energy_2", "x_y"}));
}

// An entry's own `name:` wins over an unnamed entry whose default name is the same, whatever
// their order (a user audit: a PES point named h2 at R = 1.4 came out as h2_2, labelled with the
// reference of the other point).
TEST(MoleculeList, AnExplicitNameIsKeptOverAnUnnamedEntryOfThatName) {
  const auto m = molecules_of(
      "system: {molecules: [{molecule: h2, geometry: [[0, 0, 0], [0, 0, 3.0]]}, {molecule: h2, name: h2}]}\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].name, "h2_2");
  EXPECT_EQ(m[1].name, "h2");
  EXPECT_NEAR(m[1].atoms[1].position[2], 1.4, 1e-12);  // the named entry is the file's geometry
  EXPECT_EQ(unique_molecule_names({"h2", "h2"}, {false, true}), (std::vector<std::string>{"h2_2", "h2"}));
}

TEST(MoleculeList, ADatasetFileListsMoleculesWithPathsRelativeToIt) {
  const auto dir = fs::temp_directory_path() / "nnvmc_dataset_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "geoms");
  std::ofstream(dir / "geoms" / "h2_stretched.xyz") << "2\nH2\nH 0 0 0\nH 0 0 1.2\n";
  std::ofstream(dir / "set.yaml") << "molecules:\n  - geoms/h2_stretched.xyz\n  - he\n"
                                     "  - {molecule: geoms/h2_stretched.xyz, name: h2_b, geometry: [[0,0,0],[0,0,2]]}\n"
                                     "  - {molecule: geoms/h2_stretched.xyz, name: h2_c, geometry: [[0,0,0],[0,0,2]], "
                                     "units: BOHR}\n"
                                     "  - {molecule: geoms/h2_stretched.xyz, name: h2_plus, charge: 1}\n";
  const auto m = molecules_of("system: {dataset: " + (dir / "set.yaml").string() + "}");
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].name, "h2_stretched");
  EXPECT_DOUBLE_EQ(m[0].atoms[1].position[2], 1.2 * kBohrPerAngstrom);
  EXPECT_EQ(m[1].name, "he");
  EXPECT_EQ(m[2].name, "h2_b");
  // A geometry without units is in the units of the molecule's file: here the .xyz's angstrom
  // (it was read as bohr, so an angstrom file's own numbers gave bonds 1.9x too short).
  EXPECT_DOUBLE_EQ(m[2].atoms[1].position[2], 2.0 * kBohrPerAngstrom);
  EXPECT_DOUBLE_EQ(m[3].atoms[1].position[2], 2.0);
  EXPECT_EQ(m[4].n_electrons(), 1);  // the .xyz's lowest spin follows the charge
  EXPECT_EQ(m[4].spin, 1);
  // A bare list works too.
  std::ofstream(dir / "list.yaml") << "- h2\n- h2\n";
  EXPECT_EQ(molecules_of("system: {dataset: " + (dir / "list.yaml").string() + "}").size(), 2u);
  fs::remove_all(dir);
}

// A key beside `molecules:` in a dataset file is refused with its line: `units: angstrom` and
// `charge: 1` there were silently ignored (a user audit: H2 at 0.74 "angstrom" trained at 0.74 bohr).
TEST(MoleculeList, ADatasetFileKeyBesideMoleculesIsRefusedNamingItsLine) {
  const auto dir = fs::temp_directory_path() / "nnvmc_dataset_keys_test";
  fs::create_directories(dir);
  std::ofstream(dir / "ang.yaml") << "# bond lengths in angstrom\nunits: angstrom\nmolecules:\n"
                                     "  - {atoms: [[H, 0, 0, 0], [H, 0, 0, 0.74]], name: h2}\n";
  const std::string e = error_of<ConfigError>("system: {dataset: " + (dir / "ang.yaml").string() + "}");
  EXPECT_TRUE(contains(e, "ang.yaml): line 2: unknown key 'units' (a dataset file is a list of molecules, or a map whose "
                          "only key is 'molecules'; give units, charge and spin in each entry)"))
      << e;
  fs::remove_all(dir);
}

TEST(MoleculeList, MistakesNameTheEntry) {
  EXPECT_TRUE(contains(error_of<ConfigError>("system: {molecules: [h2, {molecule: h2, geometry: [[0, 0, 0]]}]}"),
                       "system.molecules[1].geometry"));
  EXPECT_TRUE(contains(error_of<ConfigError>("system: {molecules: [{molecule: h2, geometri: []}]}"), "geometri"));
  EXPECT_TRUE(contains(error_of<InputError>("system: {molecules: [h2, nosuchmolecule]}"), "system.molecules[1]"));
  EXPECT_TRUE(contains(error_of<ConfigError>("system: {molecules: []}"), "system.molecules"));
  EXPECT_TRUE(contains(error_of<InputError>("system: {dataset: /no/such/file.yaml}"), "system.dataset"));
  EXPECT_TRUE(contains(error_of<InputError>("system: {molecules: [h2, {molecule: h2, spin: 1}]}"), "system.molecules[1]"));
}

TEST(MoleculeList, OneOfTheThreeKeysAndAnOverrideReplacesTheOthers) {
  try {
    (void)parse_config("system: {molecule: h2, molecules: [h2, he]}", {}, "c.yaml");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "system.molecules")) << e.what();
  }
  // A checkpoint's config with several molecules, evaluated for one (nnvmc eval CKPT system.molecule=he).
  const auto m = molecules_of("system: {molecules: [h2, lih]}", {"system.molecule=he"});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].name, "he");
  const auto back = molecules_of("system: {molecule: he}", {"system.molecules=[h2, lih]"});
  ASSERT_EQ(back.size(), 2u);
  // The resolved config writes the list and reads back to the same molecules.
  const Config c = parse_config("system: {molecules: [h2, {molecule: h2, geometry: [[0,0,0],[0,0,2]]}]}", {}, "c.yaml");
  const auto again = resolve_molecules(parse_config(to_yaml(c), {}, "resolved").system);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].atoms[1].position[2], 2.0);
}

// Frames are named by their own number (@-2 of two frames is @0), and the same molecule twice in
// a list is named in a warning: [traj.xyz@0, traj.xyz@-2] trained frame 0 twice, as traj_0 and
// traj_-2, without a word.
TEST(MoleculeList, AFrameCountedFromTheEndIsNamedByItsNumberAndARepeatIsWarnedOf) {
  const auto dir = fs::temp_directory_path() / "nnvmc_list_frames";
  fs::create_directories(dir);
  std::ofstream(dir / "traj.xyz") << "2\nA\nH 0 0 0\nH 0 0 0.74\n3\nB\nO 0 0 0\nH 0 0.757 0.587\nH 0 -0.757 0.587\n";
  const std::string f = (dir / "traj.xyz").string();
  testing::internal::CaptureStdout();  // (the log's sink: stdout in tests, stderr in the app)
  testing::internal::CaptureStderr();
  const auto m = molecules_of("system: {molecules: [" + f + "@0, " + f + "@-1, " + f + "@-2]}");
  const std::string err = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].name, "traj_0");
  EXPECT_EQ(m[1].name, "traj_1");
  EXPECT_EQ(m[2].name, "traj_0_2");
  EXPECT_EQ(m[2].given_name, "traj@0");  // (what eval --molecule traj@0 ... finds it by)
  EXPECT_TRUE(contains(err, "'traj_0_2' is the same molecule as 'traj_0'")) << err;
  EXPECT_FALSE(contains(err, "'traj_1' is the same")) << err;
  fs::remove_all(dir);
}

// A molecule without `spin:` takes the lowest spin, as an .xyz file does (found by a user audit:
// HeH was refused for "spin 0 has the wrong parity", a spin the file never gave). A charge other
// than the file's, without a spin, takes the lowest spin too, as `--charge` does (a user audit:
// the README's {molecule: h, charge: -1} was refused for H's spin 1); the file's spin is kept
// with its own charge.
TEST(MoleculeList, AMoleculeWithoutSpinTakesTheLowestAndSoDoesAChargeOtherThanItsFiles) {
  const auto heh = molecules_of("system: {molecule: {atoms: [[He, 0, 0, 0], [H, 0, 0, 1.5]]}}");
  EXPECT_EQ(heh[0].n_electrons(), 3);
  EXPECT_EQ(heh[0].spin, 1);
  EXPECT_FALSE(heh[0].spin_given);
  EXPECT_EQ(molecules_of("system: {molecule: {atoms: [[H, 0, 0, 0]]}, charge: -1}")[0].spin, 0);  // H⁻ after the charge
  EXPECT_TRUE(contains(error_of<InputError>("system: {molecule: {atoms: [[He, 0, 0, 0], [H, 0, 0, 1.5]], spin: 0}}"),
                       "spin 0 has the wrong parity for 3 electrons (n_up - n_down must have the parity of n: "
                       "e.g. spin: 1)"));
  testing::internal::CaptureStdout();  // (the log's sink in tests)
  const auto he_anion = molecules_of("system: {molecule: he, charge: -1}");
  const std::string said = testing::internal::GetCapturedStdout();
  EXPECT_EQ(he_anion[0].spin, 1);
  EXPECT_TRUE(contains(said, "system.charge=-1: molecule 'he' has 3 electrons and takes the lowest spin, 1 (its file "
                             "gives 0 for charge 0); set system.spin for another"))
      << said;
  EXPECT_EQ(molecules_of("system: {molecule: he, charge: -1, spin: 3}")[0].n_up(), 3);
  EXPECT_EQ(molecules_of("system: {molecule: li, charge: 0}")[0].spin, 1);  // its own charge: the file's doublet
  const auto ions = molecules_of("system: {molecules: [{molecule: h, charge: -1}, {molecule: li, charge: 1}]}");
  EXPECT_EQ(ions[0].spin, 0);
  EXPECT_EQ(ions[0].name, "h_anion");  // (the README's example)
  EXPECT_EQ(ions[1].spin, 0);
  EXPECT_EQ(molecules_of("system: {molecules: [{molecule: li, charge: -1, spin: 2}]}")[0].spin, 2);
  // an error that system.charge or system.spin caused names them (it named system.molecule), and
  // for a list says that they apply to every molecule (no one spin suits Li+ and He+)
  const auto h_cation = error_of<InputError>("system: {molecule: h, charge: 1}");
  EXPECT_TRUE(contains(h_cation, "charge 1 leaves 0 electrons (with system.charge=1)")) << h_cation;
  const auto h_spin = error_of<InputError>("system: {molecule: h, spin: 0}");
  EXPECT_TRUE(contains(h_spin, "spin 0 has the wrong parity for 1 electron (n_up")) << h_spin;
  EXPECT_TRUE(contains(h_spin, "(with system.spin=0)")) << h_spin;
  // (and only errors about charge, spin or electrons: coinciding atoms are not the charge's doing)
  const auto atoms = error_of<InputError>("system: {molecule: {atoms: [[H, 0, 0, 0], [H, 0, 0, 0]]}, charge: 0}");
  EXPECT_TRUE(contains(atoms, "atoms 0 and 1")) << atoms;
  EXPECT_FALSE(contains(atoms, "with system.charge")) << atoms;
  const auto list = error_of<InputError>("system: {molecules: [li, he], charge: 1, spin: 0}");
  EXPECT_TRUE(contains(list, "(with system.charge=1, system.spin=0; system.charge and system.spin apply to every "
                             "molecule of the list: to give molecules different ones, set charge: and spin: in their "
                             "entries of system.molecules instead)"))
      << list;
  // an entry's own charge also takes the lowest spin of a molecule that gives none (compare reads
  // entries without resolve_molecules)
  const std::string h2 = (fs::temp_directory_path() / "nnvmc_h2_no_spin.yaml").string();
  std::ofstream(h2) << "atoms: [[H, 0, 0, 0], [H, 0, 0, 1.4]]\n";
  const System cation = parse_molecule_entry(YAML::Load("{molecule: " + h2 + ", charge: 1}"), "molecules[0]", "", 0);
  EXPECT_EQ(cation.spin, 1);
  EXPECT_NO_THROW(cation.validate());
}

// A molecule file's reference energy stays with an entry that only names (or renames) it, and
// goes with another geometry, charge or spin, also one set by system.charge (it stayed, and a
// run of He⁺ carried neutral He's exact energy). `units` without a geometry is refused (it was
// ignored; a user audit).
TEST(MoleculeList, AFilesReferenceEnergyStaysOnlyWithItsOwnMoleculeAndUnitsNeedAGeometry) {
  const auto m = molecules_of("system: {molecules: [{molecule: he, name: helium}, {molecule: he, charge: 1, spin: 1}]}");
  ASSERT_TRUE(m[0].e_ref.has_value());
  EXPECT_DOUBLE_EQ(*m[0].e_ref, -2.903724377);
  EXPECT_FALSE(m[1].e_ref.has_value());
  EXPECT_TRUE(molecules_of("system: {molecule: he}")[0].e_ref.has_value());
  EXPECT_FALSE(molecules_of("system: {molecule: he, charge: 1, spin: 1}")[0].e_ref.has_value());
  EXPECT_TRUE(contains(error_of<ConfigError>("system: {molecules: [{molecule: lih, units: angstrom}]}"),
                       "'system.molecules[0].units' applies to a 'geometry', which this entry does not give"));
}

// An entry that changes its molecule's charge or spin without a name is named for it (a
// comparison of H and H- called them "h" and "h-2"); a given name is kept.
TEST(MoleculeList, AnEntryThatChangesChargeOrSpinIsNamedForIt) {
  const auto m = molecules_of(
      "system: {molecules: [h, {molecule: h, charge: -1, spin: 0}, {molecule: lih, charge: 1, spin: 1}, "
      "{molecule: h2, spin: 2}, {molecule: ch4, charge: 2}, {molecule: lih, charge: 1, spin: 1, name: lihp}, "
      "{molecule: h2, charge: 0}]}");
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m[0].name, "h");
  EXPECT_EQ(m[1].name, "h_anion");
  EXPECT_EQ(m[2].name, "lih_cation");
  EXPECT_EQ(m[3].name, "h2_spin2");
  EXPECT_EQ(m[4].name, "ch4_charge+2");
  EXPECT_EQ(m[5].name, "lihp");
  EXPECT_EQ(m[6].name, "h2");
  // a file's triplet taken as a singlet is named for it too (it kept the file's name: a review)
  const std::string triplet = (fs::temp_directory_path() / "nnvmc_o_triplet.yaml").string();
  std::ofstream(triplet) << "spin: 2\natoms: [[O, 0, 0, 0]]\n";
  const auto o = molecules_of("system: {molecules: [" + triplet + ", {molecule: " + triplet + ", spin: 0}]}");
  EXPECT_EQ(o[1].name, "nnvmc_o_triplet_spin0");
  EXPECT_EQ(o[0].name, "nnvmc_o_triplet");
}

// system.charge / system.spin replacing what an entry gives is said (a user audit: a neutral Li
// trained as li_cation without a word).
TEST(MoleculeList, SystemChargeReplacingAnEntrysOwnIsWarnedAbout) {
  testing::internal::CaptureStdout();  // (the log's sink: stdout in tests)
  testing::internal::CaptureStderr();
  const auto m = molecules_of(
      "system: {molecules: [{molecule: li, charge: 1}, {molecule: li, spin: 3}, li], charge: 0, spin: 1}\n");
  const std::string log = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].charge, 0);
  EXPECT_EQ(m[1].spin, 1);
  EXPECT_NE(log.find("system.charge=0 replaces the charge 1 that the entry 'li_cation' gives"), std::string::npos) << log;
  EXPECT_NE(log.find("system.spin=1 replaces the spin 3 that the entry 'li_spin3' gives"), std::string::npos) << log;
  EXPECT_EQ(log.find("entry 'li' gives"), std::string::npos) << log;  // (the plain entry gave none)
}

// An inline entry's error names its key once (it was "'K': K:1: ..."), and a dataset file's the
// entry's line in that file.
TEST(MoleculeList, AnInlineEntrysErrorNamesItsKeyOnceAndADatasetsItsLine) {
  const auto dir = fs::temp_directory_path() / "nnvmc_dataset_bad_element";
  fs::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << "molecules:\n  - h2\n  - {atoms: [[Xx, 0, 0, 0]]}\n";
  const auto e = error_of<InputError>("system: {dataset: " + (dir / "bad.yaml").string() + "}");
  EXPECT_TRUE(contains(e, "'system.dataset (" + (dir / "bad.yaml").string() + ")[1]' (line 3): unknown element 'Xx'"))
      << e;
  const auto inline_error = error_of<InputError>("system: {molecules: [h2, {atoms: [[Xx, 0, 0, 0]]}]}");
  EXPECT_TRUE(contains(inline_error, "'system.molecules[1]': unknown element 'Xx'")) << inline_error;
  fs::remove_all(dir);
}

// Entries renamed to keep names unique or usable are said (two entries named x became x and x_2,
// and x@1 became x_1, without a word: a user audit).
TEST(MoleculeList, RenamedEntriesAreSaid) {
  testing::internal::CaptureStdout();  // (the log's sink: stdout in tests)
  testing::internal::CaptureStderr();
  const auto m = molecules_of("system: {molecules: [{molecule: lih, name: dup}, {molecule: h2, name: dup}, "
                              "{molecule: he, name: \"he@1\"}]}");
  const std::string log = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1].name, "dup_2");
  EXPECT_EQ(m[2].name, "he_1");
  EXPECT_TRUE(contains(log, "system.molecules: 2 entries are named 'dup': they are called dup, dup_2")) << log;
  EXPECT_TRUE(contains(log, "system.molecules: the molecule name 'he@1' is called 'he_1'")) << log;
}

// A molecule written as an inline entry (a checkpoint's, a comparison cell's) reads back as itself,
// its reference energy and that reference's source included (an evaluation states them).
TEST(MoleculeList, AnInlineEntryReadsBackWithItsReferenceEnergy) {
  const System lih = molecules_of("system: {molecule: lih}").front();
  ASSERT_TRUE(lih.e_ref.has_value());
  const std::string entry = inline_molecule_entry(lih, "lih_tight");
  const System back = molecules_of("system: {molecules: [" + entry + "]}").front();
  EXPECT_EQ(back.name, "lih_tight");
  EXPECT_TRUE(same_geometry(back, lih));
  ASSERT_TRUE(back.e_ref.has_value()) << entry;
  EXPECT_EQ(*back.e_ref, *lih.e_ref);
  EXPECT_EQ(back.e_ref_source, lih.e_ref_source);
  System bare = lih;  // none: none written
  bare.e_ref.reset();
  EXPECT_FALSE(contains(inline_molecule_entry(bare, "x"), "e_ref"));
  EXPECT_FALSE(molecules_of("system: {molecules: [" + inline_molecule_entry(bare, "x") + "]}").front().e_ref);
}
