#pragma once
// Message tags shared by moonmq's actors (CAF 0.17 atoms, at most 10 chars).

#include <caf/atom.hpp>

namespace moonmq {

using enroll_atom = caf::atom_constant<caf::atom("enroll")>;  ///< join the registry
using list_atom = caf::atom_constant<caf::atom("list")>;      ///< list entries
using inspect_atom = caf::atom_constant<caf::atom("inspect")>;  ///< one entry in detail
using status_atom = caf::atom_constant<caf::atom("status")>;  ///< an actor's own state summary (JSON text)
using stop_atom = caf::atom_constant<caf::atom("stop")>;      ///< orderly shutdown

}  // namespace moonmq
