#include "kernelproto/channel.hpp"
