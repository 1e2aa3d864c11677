#pragma once
/// @file config_yaml.hpp
/// Generic YAML reading/writing of any struct with a `visit(V&)` member (see config.hpp).
/// Reading rejects unknown keys (suggesting the closest valid one) and wrong types, naming
/// the full key path and the source line.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/config.hpp"
#include "core/errors.hpp"

namespace nnvmc::config_yaml {

/// Levenshtein distance (for "did you mean" suggestions).
int edit_distance(const std::string& a, const std::string& b);

/// " (did you mean 'x'?)" or "" when nothing is close; lists candidates otherwise.
/// `prefix` ("optim") is put before the suggested key, so it reads as the key path to write.
std::string suggestion(const std::string& key, const std::vector<std::string>& candidates,
                       const std::string& prefix = "");

/// "file:line" of a node when known.
std::string location(const YAML::Node& node, const std::string& where);

/// `message` of a setting's range check ("'KEY' must be ...") with where the setting came from:
/// the last of `overrides` that sets KEY ("override 'KEY=VALUE': ..."), else its line in
/// `where`'s document `root` ("FILE:LINE: ..."); unchanged when neither gave KEY.
std::string located_setting_error(const std::string& message, const YAML::Node& root,
                                  const std::vector<std::string>& overrides, const std::string& where);

template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

template <class T, class = void> struct has_visit : std::false_type {};
template <class T>
struct has_visit<T, std::void_t<decltype(std::declval<T&>().visit(std::declval<int&>()))>>
    : std::true_type {};

class Reader;

/// Converts one YAML node into a field of type T.
template <class T> void read_value(const YAML::Node& node, T& out, const std::string& path,
                                   const std::string& where);

/// Visitor reading fields of a struct from a YAML mapping.
class Reader {
 public:
  Reader(const YAML::Node& map, std::string path, std::string where)
      : map_(map), path_(std::move(path)), where_(std::move(where)) {}
  template <class T> void operator()(const char* key, T& field, const char* /*doc*/) {
    known_.emplace_back(key);
    const YAML::Node child = map_[key];
    if (!child) return;
    if (!child.IsNull()) {
      read_value(child, field, join(key), where_);
    } else if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
      // `walkers:` or `walkers: ~` ran with the default unsaid. An empty section (`sampler:`)
      // still means its defaults, an optional key left empty is unset, and an empty list or
      // inline block (a comparison's `base:`, `overrides:`) is absent.
      throw ConfigError(location(child, where_) + ": '" + join(key) +
                        "' has no value (give one, or leave the key out for its default)");
    }
  }
  /// Throws for keys in the mapping that no field claimed.
  void check_unknown() const;

 private:
  std::string join(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  YAML::Node map_;
  std::string path_, where_;
  std::vector<std::string> known_;
};

template <class T> void read_struct(const YAML::Node& node, T& out, const std::string& path,
                                    const std::string& where) {
  if (!node.IsMap())
    throw ConfigError(location(node, where) + ": '" + path + "' must be a mapping");
  Reader r(node, path, where);
  out.visit(r);
  r.check_unknown();
}

/// An integer written with a leading zero ("016") is octal to yaml-cpp (YAML 1.1) and decimal to
/// YAML 1.2 and to a reader: refused, with the node's location (sampler.walkers=016 ran 14 walkers,
/// a user audit). Walks the scalars of `node` (a value or a list of them).
inline void refuse_leading_zero_integers(const YAML::Node& node, const std::string& path, const std::string& where) {
  if (node.IsSequence()) {
    for (const auto& item : node) refuse_leading_zero_integers(item, path, where);
    return;
  }
  if (!node.IsScalar()) return;
  const std::string& text = node.Scalar();
  const std::size_t digits = text.find_first_not_of("+-");
  if (digits == std::string::npos || text[digits] != '0' || text.size() < digits + 2) return;
  if (text.find_first_not_of("0123456789", digits) != std::string::npos) return;  // (0x20, 0.5: not this case)
  throw ConfigError(location(node, where) + ": '" + path + "' = " + text +
                    ": an integer with a leading zero is ambiguous (YAML 1.1 reads it as octal); write it without "
                    "the zero");
}

template <class T>
void read_value(const YAML::Node& node, T& out, const std::string& path, const std::string& where) {
  if constexpr ((std::is_integral_v<T> && !std::is_same_v<T, bool>) || std::is_same_v<T, std::vector<int>> ||
                std::is_same_v<T, std::vector<std::array<int, 2>>>)
    refuse_leading_zero_integers(node, path, where);
  if constexpr (has_visit<T>::value) {
    read_struct(node, out, path, where);
  } else if constexpr (std::is_same_v<T, InlineYaml>) {
    out.yaml = node.IsScalar() ? node.Scalar() : YAML::Dump(node);
  } else if constexpr (is_optional<T>::value) {
    typename T::value_type v{};
    read_value(node, v, path, where);
    out = std::move(v);
  } else {
    try {
      if constexpr (std::is_same_v<T, bool> || std::is_arithmetic_v<T>) {
        if (!node.IsScalar()) throw YAML::Exception(node.Mark(), "not a scalar");
        if constexpr (std::is_unsigned_v<T>) {
          if (!node.Scalar().empty() && node.Scalar()[0] == '-')
            throw YAML::Exception(node.Mark(), "negative");
        }
      }
      out = node.as<T>();
      if constexpr (std::is_floating_point_v<T>) {
        if (!std::isfinite(out))
          throw ConfigError(location(node, where) + ": '" + path + "' must be a finite number, got '" +
                            node.Scalar() + "'");
      }
    } catch (const YAML::Exception&) {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // A number that does not fit: say so rather than "must be an integer". The limits as
        // powers of two, exact in double (the 64-bit maximum rounds up to 2^64, which was "not an
        // integer"; a review: 2147483647.0 must not read as out of range).
        double v = 0;
        const double past_max = std::ldexp(1.0, std::numeric_limits<T>::digits);
        const double below_min = std::is_signed_v<T> ? -past_max : 0.0;
        if (node.IsScalar() && YAML::convert<double>::decode(node, v) && std::isfinite(v) && v == std::floor(v) &&
            (v < below_min || v >= past_max))
          throw ConfigError(location(node, where) + ": '" + path + "' = " + node.Scalar() +
                            " is out of range (" + std::to_string(std::numeric_limits<T>::min()) + " to " +
                            std::to_string(std::numeric_limits<T>::max()) + ")");
      }
      std::string want = "a value of the right type";
      if constexpr (std::is_same_v<T, bool>) want = "true or false";
      else if constexpr (std::is_integral_v<T>) want = "an integer";
      else if constexpr (std::is_floating_point_v<T>) want = "a number";
      else if constexpr (std::is_same_v<T, std::string>) want = "a string";
      else if constexpr (std::is_same_v<T, std::vector<std::array<int, 2>>>)
        want = "a list of [one-electron, two-electron] width pairs, one per layer (e.g. [[32, 8], [32, 8]])";
      else if constexpr (std::is_same_v<T, std::vector<int>>) want = "a list of integers";
      else want = "a list";
      throw ConfigError(location(node, where) + ": '" + path + "' must be " + want + ", got '" +
                        (node.IsScalar() ? node.Scalar() : YAML::Dump(node)) + "'");
    }
  }
}

/// Visitor emitting a struct as a commented YAML mapping.
class Writer {
 public:
  explicit Writer(YAML::Emitter& out) : out_(out) {}
  template <class T> void operator()(const char* key, const T& field, const char* doc) {
    if constexpr (is_optional<T>::value) {
      if (field) (*this)(key, *field, doc);  // unset optionals are left out
      return;
    } else {
      write(key, field, doc);
    }
  }

 private:
  template <class T> void write(const char* key, const T& field, const char* doc) {
    out_ << YAML::Key << key << YAML::Value;
    if constexpr (has_visit<T>::value) {
      out_ << YAML::BeginMap;
      const_cast<T&>(field).visit(*this);
      out_ << YAML::EndMap;
    } else if constexpr (std::is_same_v<T, InlineYaml>) {
      out_ << YAML::Load(field.yaml);
    } else if constexpr (std::is_same_v<T, std::vector<std::array<int, 2>>>) {
      out_ << YAML::Flow << YAML::BeginSeq;
      for (const auto& p : field) out_ << YAML::Flow << YAML::BeginSeq << p[0] << p[1] << YAML::EndSeq;
      out_ << YAML::EndSeq;
    } else if constexpr (std::is_same_v<T, std::vector<int>>) {
      out_ << YAML::Flow << YAML::BeginSeq;
      for (int x : field) out_ << x;
      out_ << YAML::EndSeq;
    } else if constexpr (std::is_same_v<T, double>) {
      write_double(field);
    } else {
      out_ << field;
    }
    if constexpr (!has_visit<T>::value) out_ << YAML::Comment(doc);
  }

  /// The shortest text that reads back as the same double (0.3, not yaml-cpp's 17 digits
  /// 0.29999999999999999); non-finite values as yaml-cpp writes them (.inf, .nan).
  void write_double(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    if (std::isfinite(v) && r.ec == std::errc()) out_ << std::string(buf, r.ptr);
    else out_ << v;
  }

  YAML::Emitter& out_;
};

/// Applies `a.b.c=value` overrides to a YAML tree (value parsed as YAML). A mapping value given
/// for a key that holds a mapping merges into it key by key; any other value replaces.
void apply_override(YAML::Node& root, const std::string& assignment);

/// The override `assignment` (key.path=value) alone, as the YAML tree it sets (`{a: {b: value}}`);
/// nullopt for a malformed one (parse_config reports it).
std::optional<YAML::Node> override_tree(const std::string& assignment);

/// Reads the override `assignment` alone into a default `T`, so that an unknown key or a wrong
/// type in it is a ConfigError naming the override rather than the file it is applied to.
template <class T> void check_override(const std::string& assignment) {
  YAML::Node alone(YAML::NodeType::Map);
  apply_override(alone, assignment);
  T unused;
  read_struct(alone, unused, "", "override '" + assignment + "'");
}

/// Sets the defaults that depend on another key and were not given in `root` (the tree `c` was
/// read from): optim.lr, optim.lr_delay and optim.determinant_balance by optim.type, pretrain.steps by
/// model.type. parse_config applies them; so must any other reader of a run config (compare).
void apply_dependent_defaults(Config& c, const YAML::Node& root);

}  // namespace nnvmc::config_yaml
