// The TLSF slow paths and walkers, compiled once for the two supported second-level indexes.
#include "strata/heap/tlsf.hpp"

namespace strata {
template class basic_tlsf<4>;
template class basic_tlsf<5>;
} // namespace strata
