# Sourced by the CCSD comparison scripts: resolve_system SYS TMPDIR sets
#   mol  - what nnvmc ccsd takes (a configs/molecules name, or frame SYS of $XYZ written to TMPDIR)
#   psi  - the Psi4 scripts' molecule arguments (file, basis cc-pvdz, frame)
#   name - the row label: (H2O)N for a water-cluster size N, else SYS
resolve_system() {
  local sys=$1 tmp=$2
  if [[ $sys =~ ^[0-9]+$ ]]; then
    python3 bench/xyz_frame.py "$XYZ" "$sys" "$tmp/mol.xyz"
    mol="$tmp/mol.xyz"; psi=("$XYZ" cc-pvdz --frame "$sys"); name="(H2O)$sys"
  else
    mol="$sys"; psi=("configs/molecules/$sys.yaml" cc-pvdz); name="$sys"
  fi
}
