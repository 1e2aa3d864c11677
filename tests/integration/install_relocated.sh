#!/bin/sh
# An installed nnvmc, moved with its prefix, finds its basis sets, molecules and scripts beside
# itself (not in the source tree it was built from) and runs a Hartree–Fock calculation from /.
#   install_relocated.sh CMAKE BUILD_DIR SOURCE_DIR
set -eu
CMAKE=$1 BUILD=$2 SRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$CMAKE" --install "$BUILD" --prefix "$T/first" > "$T/install.log"
mv "$T/first" "$T/moved"
cd /
unset NNVMC_DATA_DIR NNVMC_BASIS_DIR NNVMC_MOLECULES NNVMC_SCRIPTS
"$T/moved/bin/nnvmc" --version > "$T/version.txt"
cat "$T/version.txt"
grep -q "data root   $T/moved/share/nnvmc" "$T/version.txt" || { echo "FAIL: data root is not the moved prefix"; exit 1; }
grep -q "basis sets  $T/moved/share/nnvmc/data/basis" "$T/version.txt" || { echo "FAIL: basis dir"; exit 1; }
grep -q "$SRC" "$T/version.txt" && { echo "FAIL: the source tree is still used"; exit 1; }
"$T/moved/bin/nnvmc" scf h2 --basis sto-3g --json > "$T/scf.json"
python3 - "$T/scf.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["e_hf"]
assert abs(e - -1.116714) < 1e-5, e  # RHF/STO-3G H2 at R = 1.4 bohr (Szabo & Ostlund: -1.1167)
print("relocated nnvmc: E_HF(H2/STO-3G) =", e)
PY
# The documented environment variables point it elsewhere: a molecule directory of one's own,
# a basis directory (an empty one is a clear error naming the basis), and the whole data root.
mkdir "$T/mols"
printf 'units: bohr\natoms:\n  - [H, 0, 0, 0]\n  - [H, 0, 0, 1.4]\n' > "$T/mols/hh.yaml"
NNVMC_MOLECULES="$T/mols" "$T/moved/bin/nnvmc" scf hh --basis sto-3g --json > "$T/hh.json"
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['e_hf']; assert abs(e - -1.116714) < 1e-5, e" "$T/hh.json"
rc=0; NNVMC_BASIS_DIR="$T/mols" "$T/moved/bin/nnvmc" scf h2 --basis sto-3g > "$T/nobasis.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "unknown basis 'sto-3g'" "$T/nobasis.txt" || { echo "FAIL: empty NNVMC_BASIS_DIR: rc=$rc $(cat "$T/nobasis.txt")"; exit 1; }
NNVMC_DATA_DIR="$T/moved/share/nnvmc" "$BUILD/src/app/nnvmc" --version > "$T/version2.txt"
grep -q "data root   $T/moved/share/nnvmc" "$T/version2.txt" || { echo "FAIL: NNVMC_DATA_DIR ignored"; cat "$T/version2.txt"; exit 1; }
NNVMC_DATA_DIR="$T/moved/share/nnvmc" "$BUILD/src/app/nnvmc" scf h2 --basis sto-3g --json > /dev/null
echo "NNVMC_MOLECULES, NNVMC_BASIS_DIR and NNVMC_DATA_DIR are honoured"
# `nnvmc profile` as a user first runs it: no --output (runs/profile_<config>), with the roofline
# measurement and the plots, the plotting scripts taken from NNVMC_SCRIPTS, and a key=value
# override of the config.
mkdir "$T/work" "$T/myscripts"
cp "$T/moved/share/nnvmc/scripts/"* "$T/myscripts/"
NNVMC_SCRIPTS="$T/myscripts" "$T/moved/bin/nnvmc" --version | grep -q "scripts     $T/myscripts" ||
  { echo "FAIL: NNVMC_SCRIPTS ignored by --version"; exit 1; }
printf 'model: {type: ferminet, ferminet: {hidden_dims: [[4, 2]], determinants: 1}}\nsampler: {walkers: 8, steps_per_iteration: 1, burn_in: 1}\n' > "$T/work/prof.yaml"
(cd "$T/work" && NNVMC_SCRIPTS="$T/myscripts" "$T/moved/bin/nnvmc" profile prof.yaml run.threads=1 --molecules h \
  --iterations 1 --warmup 1 --profile-iterations 1 > "$T/profile.txt" 2>&1) || { echo "FAIL: profile"; cat "$T/profile.txt"; exit 1; }
P="$T/work/runs/profile_prof"
for f in report.md profile.json profile.h5 stage_bars.png roofline.png; do
  [ -s "$P/$f" ] || { echo "FAIL: profile wrote no $f in runs/profile_prof"; ls -l "$P"; cat "$T/profile.txt"; exit 1; }
done
grep -q "Measured on this machine (the best of a few repeats each, so a busy machine lowers them): DGEMM" "$P/report.md" || { echo "FAIL: no roofline in the report"; exit 1; }
grep -q '"threads": 1' "$P/profile.json" || grep -q '"threads":1' "$P/profile.json" ||
  { echo "FAIL: the override run.threads=1 is not in profile.json"; grep -n threads "$P/profile.json" | head; exit 1; }
echo "profile with its defaults: roofline, plots (NNVMC_SCRIPTS) and runs/profile_prof"
