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
