#include "models/registry.hpp"

#include "core/errors.hpp"
#include "models/ferminet/ferminet.hpp"
#include "models/hf/hf_determinant.hpp"
#include "models/paulinet/paulinet.hpp"
#include "models/orbformer/orbformer.hpp"
#include "models/psiformer/psiformer.hpp"

namespace nnvmc {

void ModelRegistry::add(const std::string& name, ModelFactory factory, ModelTraits traits) {
  factories_[name] = std::move(factory);
  traits_[name] = traits;
}

namespace {
[[noreturn]] void unknown_ansatz(const ModelRegistry& registry, const std::string& name) {
  std::string all;
  for (const auto& n : registry.names()) all += (all.empty() ? "" : ", ") + n;
  throw ConfigError("'model.type': unknown ansatz '" + name + "' (known: " + all + ")");
}
}  // namespace

std::shared_ptr<WaveFunction> ModelRegistry::create(const ModelConfig& config,
                                                    const System& system) const {
  const auto it = factories_.find(config.type);
  if (it == factories_.end()) unknown_ansatz(*this, config.type);
  return it->second(config, system);
}

ModelTraits ModelRegistry::traits(const std::string& name) const {
  const auto it = traits_.find(name);
  if (it == traits_.end()) unknown_ansatz(*this, name);
  return it->second;
}

bool ansatz_is_trainable(const std::string& type) { return model_registry().traits(type).trainable; }

std::vector<std::string> ModelRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& kv : factories_) out.push_back(kv.first);
  return out;
}

void register_builtin_models(ModelRegistry& registry) {
  registry.add("ferminet", [](const ModelConfig& c, const System& s) {
    return std::make_shared<FermiNet>(c.ferminet, s);
  });
  registry.add("orbformer", [](const ModelConfig& c, const System& s) {
    auto model = std::make_shared<Orbformer>(c.orbformer);  // any molecule: only its elements are checked
    model->check_system(system_tensors(s, torch::kFloat64));
    return model;
  });
  registry.add("psiformer", [](const ModelConfig& c, const System& s) {
    return std::make_shared<Psiformer>(c.psiformer, s);
  });
  registry.add("hf", [](const ModelConfig& c, const System& s) {
    try {
      return std::make_shared<HartreeFockDeterminant>(s, c.hf.basis);
    } catch (const ConfigError&) {
      throw;
    } catch (const InputError& e) {  // unknown basis, or one without this molecule's elements
      throw ConfigError(std::string("model.hf.basis: ") + e.what());
    }
  }, {/*trainable=*/false});
  registry.add("paulinet", [](const ModelConfig& c, const System& s) { return make_paulinet(c.paulinet, s); });
}

const ModelRegistry& model_registry() {
  static const ModelRegistry registry = [] {
    ModelRegistry r;
    register_builtin_models(r);
    return r;
  }();
  return registry;
}

std::shared_ptr<WaveFunction> make_model(const ModelConfig& config, const System& system,
                                         torch::Dtype dtype, torch::Device device) {
  auto model = model_registry().create(config, system);
  model->to(device, dtype);
  return model;
}

}  // namespace nnvmc
