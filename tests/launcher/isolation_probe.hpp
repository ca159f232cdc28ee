#pragma once
// One probe of a sandbox's isolation, run by the bwrap sandbox's tests and by the zygote's:
// both must show kernel code the same walls. The probe writes out.txt in its working
// directory; check_isolation reads it.

#include <doctest/doctest.h>

#include <sys/types.h>

#include <string>

namespace callisto::launcher::test {

inline constexpr const char* isolation_probe = R"(
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def unshare(flags):
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
out = []
out.append("uid=%d gid=%d" % (os.getuid(), os.getgid()))
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
out.append(f"processes={len(pids)} first={pids[0]}")
out.append("cwd=" + os.getcwd() + " home=" + os.environ["HOME"])
out.append("shadow=" + str(os.path.exists("/etc/shadow")))
out.append("sys=" + str(os.path.exists("/sys/kernel")))
# No network but loopback, read from the interfaces (tests dial no address beyond loopback).
out.append("interfaces=" + ",".join(name for _, name in socket.if_nameindex()))
out.append("e2b_home=" + os.path.realpath("/home/user") + " same_as_work=" +
           str(os.path.samefile("/home/user", "/work")))
for name, make in [("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)),
                   ("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)),
                   ("userns", lambda: unshare(0x10000000)),
                   ("netns", lambda: unshare(0x40000000))]:
    try:
        make()
        out.append(name + "=allowed")
    except OSError:
        out.append(name + "=denied")
try:
    open("/usr/evil", "w")
    out.append("usr=writable")
except OSError:
    out.append("usr=readonly")
open("out.txt", "w").write("\n".join(out) + "\n")
)";

inline void check_isolation(const std::string& out, uid_t uid) {
    INFO(out);
    CHECK(out.find("uid=" + std::to_string(uid) + " gid=" + std::to_string(uid)) !=
          std::string::npos);
    // The jail's init (pid 1) and the probe, nothing else. (Not "1,2": a sanitizer's runtime
    // thread in pid 1 takes a pid number too.)
    CHECK(out.find("processes=2 first=1\n") != std::string::npos);
    CHECK(out.find("cwd=/work home=/work") != std::string::npos);
    CHECK(out.find("shadow=False") != std::string::npos);
    CHECK(out.find("sys=False") != std::string::npos);
    CHECK(out.find("interfaces=lo\n") != std::string::npos);
    // E2B's home, where code written for E2B looks for its files: the working directory,
    // mounted there again (not a link, so a getcwd() there says /home/user).
    CHECK(out.find("e2b_home=/home/user same_as_work=True\n") != std::string::npos);
    CHECK(out.find("packet=denied") != std::string::npos);
    CHECK(out.find("raw=denied") != std::string::npos);
    CHECK(out.find("userns=denied") != std::string::npos);
    CHECK(out.find("netns=denied") != std::string::npos);
    CHECK(out.find("usr=readonly") != std::string::npos);
}

}  // namespace callisto::launcher::test
