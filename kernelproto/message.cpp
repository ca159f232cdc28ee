#include "kernelproto/message.hpp"
