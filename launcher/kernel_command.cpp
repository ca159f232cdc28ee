#include "launcher/kernel_command.hpp"
