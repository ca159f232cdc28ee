#pragma once
// The commands running in each sandbox, by their pid in it: what envd's List, Connect,
// SendInput, SendSignal and CloseStdin find. A command joins once it runs and leaves when it
// ends. Thread-safe (one mutex).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gateway/e2b/process_rpc.hpp"

namespace callisto::gateway::e2b {

class sandbox_process;

class process_table {
public:
    void add(const std::string& sandbox_id, std::shared_ptr<sandbox_process> process);
    void remove(const std::string& sandbox_id, std::uint32_t pid);
    // The running command the selector names (its pid, or the first with its tag), or null.
    std::shared_ptr<sandbox_process> find(const std::string& sandbox_id,
                                          const process_selector& selector) const;
    std::vector<std::shared_ptr<sandbox_process>> list(const std::string& sandbox_id) const;
    std::size_t count(const std::string& sandbox_id) const;
    // The sandbox's commands, forgotten (the sandbox is going).
    std::vector<std::shared_ptr<sandbox_process>> take(const std::string& sandbox_id);

private:
    mutable std::mutex mutex_;
    std::map<std::string, std::map<std::uint32_t, std::shared_ptr<sandbox_process>>> by_sandbox_;
};

}  // namespace callisto::gateway::e2b
