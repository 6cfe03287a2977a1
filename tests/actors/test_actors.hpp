#pragma once
// Small actors for registry and admin tests.

#include <caf/all.hpp>

#include "actors/atoms.hpp"

namespace moonmq::test {

/// Answers status with a fixed JSON summary.
inline caf::behavior chatty_actor(caf::event_based_actor*) {
  return {[](status_atom) { return std::string{"{\"ok\":true}"}; }};
}

/// Takes status requests and never answers them.
inline caf::behavior silent_actor(caf::event_based_actor* self) {
  return {[self](status_atom) {
    auto rp = self->make_response_promise<std::string>();
    return rp;  // never delivered
  }};
}

}  // namespace moonmq::test
