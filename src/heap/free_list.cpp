// The free-list heap, compiled once per fit policy.
#include "strata/heap/free_list.hpp"

namespace strata {
template class free_list<first_fit>;
template class free_list<best_fit>;
template class free_list<next_fit>;
} // namespace strata
