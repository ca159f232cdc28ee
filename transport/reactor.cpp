#include "transport/reactor.hpp"
