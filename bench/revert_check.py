#!/usr/bin/env python3
"""Issue 18: undo each reliability fix in the source, rebuild the test binary, run the test that guards it, restore.
Usage: revert_check.py [item ...]   (from a built checkout; restores the files with git checkout)"""
import subprocess, sys, re, time
import os
R = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def sh(c, t=1500):
    p = subprocess.run(c, shell=True, cwd=R, capture_output=True, text=True, timeout=t)
    return p.returncode, p.stdout + p.stderr
def patch(path, old, new, count=1):
    s = open(f'{R}/{path}').read()
    assert old in s, (path, old[:60])
    open(f'{R}/{path}', 'w').write(s.replace(old, new, count))

ITEMS = {
 '1 recovery replays the failure (sampler RNG restored too)': (
   lambda: patch('src/train/trainer.cpp', 'retry.rng_state = sampler.state().rng_state;', ''),
   ['src/train/trainer.cpp'], 'test_train', 'Recovery.ANonFiniteStepIsRetriedWithNewMovesAndTrainingConverges'),
 '2 singular orbital matrix throws (lu_factor, not _ex)': (
   lambda: patch('src/blocks/slogdet.cpp', 'return slogdet_from_lu(lu, pivots);',
                 'TORCH_CHECK(info.eq(0).all().item<bool>(), "linalg.lu_factor: singular");  // as torch::linalg_lu_factor\n  return slogdet_from_lu(lu, pivots);'),
   ['src/blocks/slogdet.cpp'], 'test_hamiltonian', 'LocalEnergy.ExactlySingularOrbitalMatricesGiveANonFiniteWalkerNotAnException'),
 '3 geometry stored in the network (nuclei buffer, used by the network)': (
   lambda: (patch('models/ferminet/ferminet.cpp', '  this->to(torch::kFloat64);\n}',
      '  register_buffer("nuclei", system_tensors(system, opts).nuclei.clone());\n  this->to(torch::kFloat64);\n}'),
    patch('models/ferminet/ferminet.cpp', '  return orbitals_electron_major<torch::Tensor>(r, sys).permute',
      '  SystemTensors own = sys; own.nuclei = named_buffers()["nuclei"].to(sys.nuclei.options());\n  return orbitals_electron_major<torch::Tensor>(r, own).permute'),
    patch('models/ferminet/ferminet.cpp', '  return log_psi<FwdLap>(r, sys);',
      '  SystemTensors own = sys; own.nuclei = named_buffers()["nuclei"].to(sys.nuclei.options());\n  return log_psi<FwdLap>(r, own);')),
   ['models/ferminet/ferminet.cpp'], 'test_train test_integration', 'Checkpoint.ParametersCarryNoGeometry:Cli.EvalAtAnotherGeometry*'),
 '3b nuclei buffer used by the network and restored from checkpoints (the original bug)': (
   lambda: (patch('models/ferminet/ferminet.cpp', '  this->to(torch::kFloat64);\n}',
      '  register_buffer("nuclei", system_tensors(system, opts).nuclei.clone());\n  this->to(torch::kFloat64);\n}'),
    patch('models/ferminet/ferminet.cpp', '  return orbitals_electron_major<torch::Tensor>(r, sys).permute',
      '  SystemTensors own = sys; own.nuclei = named_buffers()["nuclei"].to(sys.nuclei.options());\n  return orbitals_electron_major<torch::Tensor>(r, own).permute'),
    patch('models/ferminet/ferminet.cpp', '  return log_psi<FwdLap>(r, sys);',
      '  SystemTensors own = sys; own.nuclei = named_buffers()["nuclei"].to(sys.nuclei.options());\n  return log_psi<FwdLap>(r, own);'),
    patch('src/train/checkpoint.cpp', '  for (const auto& p : module.named_parameters()) m[p.key()] = p.value().detach().clone();',
      '  for (const auto& p : module.named_parameters()) m[p.key()] = p.value().detach().clone();\n  for (const auto& p : module.named_buffers()) m[p.key()] = p.value().detach().clone();'),
    patch('src/train/checkpoint.cpp', '  for (auto& p : module.named_parameters()) copy(p.key(), p.value());',
      '  for (auto& p : module.named_parameters()) copy(p.key(), p.value());\n  for (auto& p : module.named_buffers()) copy(p.key(), p.value());')),
   ['models/ferminet/ferminet.cpp', 'src/train/checkpoint.cpp'], 'test_integration', 'Cli.EvalAtAnotherGeometry*'),
 '4 eval restarts with the config step size': (
   lambda: (patch('src/app/cmd_eval.cpp', 'st.step_size = trained->sampler.step_size;', 'st.step_size = config.sampler.step_size;'),
            patch('src/app/cmd_eval.cpp', 'ra.overrides.insert(ra.overrides.begin(), strfmt("sampler.step_size=%.17g", c.molecules.front().sampler.step_size));', '')),
   ['src/app/cmd_eval.cpp'], 'test_integration', 'Cli.EvalStartsFromTheCheckpointsStepSizeAndReportsIt'),
 '4b eval adapts the step during measurement': (
   lambda: patch('src/train/evaluate.cpp', 'acc += sampler.run(logabs, s.config.sampler.steps_per_iteration);',
                 'acc += sampler.run(logabs, s.config.sampler.steps_per_iteration); sampler.adapt(acc / (t + 1));'),
   ['src/train/evaluate.cpp'], 'test_train', 'Evaluate.StepSizeAdaptsDuringBurnInOnlyThenStaysFrozen'),
 '5 no plateau flag (the last level used silently)': (
   lambda: patch('src/train/blocking.cpp', 'r.plateau = level >= 0 && len[level] >= kMinPlateauBlocks;', 'r.plateau = true;'),
   ['src/train/blocking.cpp'], 'test_train', 'Blocking.*'),
 '6 resume keeps eval/pretrain series': (
   lambda: patch('src/train/trainer.cpp', '    results.remove("eval");\n', '\n'),
   ['src/train/trainer.cpp'], 'test_train', 'Trainer.ResumedRunHasEverySeriesOfAnUninterruptedRun'),
 '7 old defaults (jvp, adam lr for spring, no pretraining)': (
   lambda: (patch('src/core/config.cpp', 'if (!steps_given) c.pretrain.steps', 'if (false) c.pretrain.steps'),
            patch('src/core/config.cpp', 'else if (!lr_given && c.optim.type != "adam") c.optim.lr = kNaturalGradientLr;', '')),
   ['src/core/config.cpp'], 'test_core', 'Config.*'),
 '8b ansatz determinants through linalg_slogdet': (
   lambda: patch('src/blocks/slogdet.cpp', 'return slogdet_from_lu(lu, pivots);', 'const auto [sg, la] = torch::linalg_slogdet(a); (void)lu; (void)pivots; return {sg.detach(), la};'),
   ['src/blocks/slogdet.cpp'], 'test_hamiltonian', 'Laplacian.Float32AutogradMethodsMatchFloat64OnMethaneWalkers'),
 '8 log_slater through linalg_slogdet': (
   lambda: patch('src/scf/orbitals_torch.cpp',
     '''    const auto [lu, pivots, info] = torch::linalg_lu_factor_ex(m);
    const auto diag = lu.diagonal(0, -2, -1);
    const auto swaps = (pivots != torch::arange(1, m.size(-1) + 1, pivots.options())).sum(-1);
    sign = sign * torch::sign(diag.detach()).prod(-1) * (1 - 2 * (swaps % 2)).to(m.scalar_type());
    logabs = logabs + diag.abs().log().sum(-1);''',
     '''    const auto [s, l] = torch::linalg_slogdet(m);
    sign = sign * s;
    logabs = logabs + l;'''),
   ['src/scf/orbitals_torch.cpp'], 'test_scf_torch', 'HartreeFockOrbitals.*'),
}
want = sys.argv[1:]
for name, (apply, files, target, filt) in ITEMS.items():
    if want and not any(name.startswith(w) for w in want): continue
    if not target: continue
    t0 = time.time()
    apply()
    rc, out = sh(f'cmake --build build -j2 --target {target} 2>&1 | tail -5')
    out = ''; failed = False
    for tg in target.split():
        exe = sh(f'find build/tests -name {tg} -type f')[1].split()[0]
        rc, o = sh(f'timeout 600 {exe} --gtest_filter="{filt}" 2>&1 | tail -25')
        out += o; failed = failed or 'FAILED' in o or rc != 0
    print(f'=== {name}: test {"FAILS" if failed else "PASSES"} with the fix undone ({time.time()-t0:.0f} s)')
    print('\n'.join(l for l in out.splitlines() if 'Failure' in l or 'FAILED' in l or 'Expected' in l or 'Which is' in l or 'what()' in l or 'C++ exception' in l)[:1500])
    sh('git checkout -- ' + ' '.join(files))
    sys.stdout.flush()
# rebuild clean
print(sh('cmake --build build -j2 2>&1 | tail -2')[1])
