#include "launcher/process_supervisor.hpp"
