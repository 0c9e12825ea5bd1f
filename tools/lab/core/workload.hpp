#pragma once
// bench/churn includes the lab's generator by this name; the generator is rng.hpp.
#include "rng.hpp"
