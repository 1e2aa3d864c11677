#pragma once
/// @file registry.hpp
/// Ansatz registry: name → factory. Filled by explicit registration calls
/// (register_builtin_models), not static initialisers.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/system.hpp"
#include "models/model_traits.hpp"
#include "models/wavefunction.hpp"

namespace nnvmc {

using ModelFactory =
    std::function<std::shared_ptr<WaveFunction>(const ModelConfig&, const System&)>;

/// What is known of an ansatz before it is built.
struct ModelTraits {
  bool trainable = true;  ///< has parameters (false: evaluated as built, e.g. the bare HF determinant)
};

/// Maps ansatz names ("ferminet", ...) to factories.
class ModelRegistry {
 public:
  void add(const std::string& name, ModelFactory factory, ModelTraits traits = {});
  /// The traits of the ansatz `name`. @throws ConfigError for an unknown name.
  ModelTraits traits(const std::string& name) const;
  /// Builds the ansatz named by config.type. @throws ConfigError for an unknown name.
  std::shared_ptr<WaveFunction> create(const ModelConfig& config, const System& system) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, ModelFactory> factories_;
  std::map<std::string, ModelTraits> traits_;
};

/// The process-wide registry with every built-in ansatz registered.
const ModelRegistry& model_registry();

/// Registers the built-in ansätze into `registry`.
void register_builtin_models(ModelRegistry& registry);

/// Builds a model for `system` in the given dtype/device.
std::shared_ptr<WaveFunction> make_model(const ModelConfig& config, const System& system,
                                         torch::Dtype dtype, torch::Device device);

}  // namespace nnvmc
