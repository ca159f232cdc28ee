#pragma once
// The per-kernel runtime directory: the connection file and, for the ipc transport, the
// socket files. Kept short (libzmq's ipc path limit is 107 characters). Removed on destruction.

#include <sys/types.h>
#include <filesystem>
#include <string>

#include "kernelproto/connection_info.hpp"
#include "launcher/process/adopt_existing.hpp"

namespace callisto::launcher {

enum class transport_kind { ipc, tcp };

class kernel_runtime_dir {
public:
    // Creates <root>/<short_name>/ (0700) and writes kernel.json (0600) with a fresh random
    // key. ipc: "ip" is "<dir>/k" so the sockets are <dir>/k-1 ... k-5. tcp: 127.0.0.1 with
    // free ports picked by the OS. Throws std::runtime_error on failure.
    kernel_runtime_dir(const std::filesystem::path& root, const std::string& short_name,
                       transport_kind transport, const std::string& kernel_name);
    // Takes over the directory of a kernel an earlier gateway started (its connection as
    // recorded, with the directory's current path).
    kernel_runtime_dir(adopt_existing_t, std::filesystem::path dir,
                       kernelproto::connection_info info);
    ~kernel_runtime_dir();  // removes the directory and everything in it
    kernel_runtime_dir(const kernel_runtime_dir&) = delete;
    kernel_runtime_dir& operator=(const kernel_runtime_dir&) = delete;

    const std::filesystem::path& path() const { return dir_; }
    const std::filesystem::path& connection_file() const { return connection_file_; }
    const kernelproto::connection_info& connection() const { return info_; }

    // ipc: true once all five socket paths exist (of any type; seal() checks them).
    bool ipc_sockets_present() const;

    // True once the kernel replaced the connection file we wrote. ipykernel rewrites it
    // (remove, then create) after binding its sockets, so sealing the directory before that
    // would make the kernel fail; the caller waits for this, or gives up waiting after a while
    // for kernels that never rewrite it.
    bool connection_file_rewritten() const;

    // The ipc socket defence, for a kernel running as `owner`: first takes the directory back
    // (root-owned, 0550) so the kernel can no longer add, rename or replace entries, then
    // lstat-checks each socket: a socket (not a symlink to some host socket), owned by
    // `owner`. Only then may the gateway connect. Returns "" or what is wrong.
    [[nodiscard]] std::string seal(uid_t owner) const;

private:
    std::filesystem::path dir_;
    std::filesystem::path connection_file_;
    kernelproto::connection_info info_;
};

}  // namespace callisto::launcher
