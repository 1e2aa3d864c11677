/// einsum front end: plan + execute.
#include "batching/contract.hpp"

#include <ATen/ATen.h>

#include "batching/backend.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {
std::vector<std::vector<std::int64_t>> shapes_of(const std::vector<at::Tensor>& ops) {
  std::vector<std::vector<std::int64_t>> s;
  for (const auto& t : ops) s.emplace_back(t.sizes().begin(), t.sizes().end());
  return s;
}
}  // namespace

Plan plan_contraction(const std::string& spec, const std::vector<at::Tensor>& operands,
                      const at::Tensor& out, const PlanOptions& options) {
  const EinsumSpec es = parse_einsum(spec);
  ensure_device_runtime(options.device);
  const c10::Device device(options.device);
  bool on_device = true;
  for (const auto& t : operands) {
    if (t.scalar_type() != out.scalar_type())
      throw InputError("einsum '" + spec + "': operands and output must have one dtype");
    on_device = on_device && is_on(t, device);
  }
  return make_plan(es, shapes_of(operands), options, on_device, is_on(out, device),
                   std::int64_t(out.element_size()));
}

ExecReport contract(const std::string& spec, const std::vector<at::Tensor>& operands,
                    const at::Tensor& out, const PlanOptions& options) {
  return execute(plan_contraction(spec, operands, out, options), operands, out, options);
}

at::Tensor contract(const std::string& spec, const std::vector<at::Tensor>& operands,
                    const PlanOptions& options, ExecReport* report) {
  const EinsumSpec es = parse_einsum(spec);
  if (operands.empty()) throw InputError("einsum '" + spec + "': no operands");
  const auto ext = label_extents(es, shapes_of(operands));
  std::vector<std::int64_t> shape;
  for (char l : es.output) shape.push_back(ext.at(l));
  at::Tensor out = at::empty(shape, operands[0].options());
  const ExecReport r = contract(spec, operands, out, options);
  if (report) *report = r;
  return out;
}

}  // namespace nnvmc::batching
