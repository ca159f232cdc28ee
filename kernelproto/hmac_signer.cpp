#include "kernelproto/hmac_signer.hpp"
