// An enum's names as one table that serves both directions: parsing a name (from the
// spec TypeScript sends) and naming a value (in messages and stats). Written once, the
// two directions cannot drift apart.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace afd {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The value called `name` in `table`, or nullopt (the caller's error says what it accepts).
template <typename E, size_t N>
std::optional<E> enumOfName(const EnumName<E> (&table)[N], const std::string& name) {
  for (const EnumName<E>& row : table)
    if (name == row.name) return row.value;
  return std::nullopt;
}

// The name of `value` in `table`; "?" for a value it lacks (an out-of-range cast).
template <typename E, size_t N>
const char* nameOfEnum(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& row : table)
    if (row.value == value) return row.name;
  return "?";
}

}  // namespace afd
