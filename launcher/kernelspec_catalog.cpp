#include "launcher/kernelspec_catalog.hpp"
