#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The last `count` lines of `text`.
std::string last_lines(const std::string& text, std::size_t count) {
    std::size_t start = text.size();
    while (count > 0 && start > 0) {
        start = text.rfind('\n', start - 1);
        if (start == std::string::npos) return text;
        if (start + 1 < text.size()) --count;
    }
    return text.substr(start == 0 ? 0 : start + 1);
}

// Repeats, after the whole run, each failed case with its failed checks and the end of what
// they were told (INFO: a client's output ends with its own failure). A long suite's output is
// often seen only by its head and tail (a CI summary); the cause is then in the tail.
struct failure_summary : doctest::IReporter {
    explicit failure_summary(const doctest::ContextOptions&) {}

    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {
        if (failures_.empty()) return;
        std::cout << "\n=== failed: what each failed case said last ===\n";
        for (const auto& f : failures_) std::cout << f << "\n";
    }
    void test_case_start(const doctest::TestCaseData& tc) override {
        const std::lock_guard lock(mutex_);
        name_ = tc.m_name;
        said_of_case_ = 0;
    }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException& e) override {
        add(std::string("threw: ") + e.error_string.c_str());
    }
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData& ad) override {
        if (!ad.m_failed || (ad.m_at & doctest::assertType::is_warn)) return;
        std::ostringstream out;
        out << ad.m_file << ":" << ad.m_line << ": " << ad.m_expr;
        if (ad.m_threw)
            out << " threw " << ad.m_exception.c_str();
        else
            out << " is " << ad.m_decomp.c_str();
        add(out.str());
    }
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}

private:
    void add(const std::string& what) {
        std::ostringstream out;
        out << "  " << what.substr(0, 600) << "\n";
        const int contexts = doctest::IReporter::get_num_active_contexts();
        const auto* const* scopes = doctest::IReporter::get_active_contexts();
        for (int i = 0; i < contexts; ++i) {
            std::ostringstream told;
            scopes[i]->stringify(&told);
            out << "  ... " << last_lines(told.str(), 15) << "\n";
        }
        const std::lock_guard lock(mutex_);  // checks may fail on several threads
        // A check failing in a loop is said a few times, not hundreds.
        if (++said_of_case_ <= max_said_per_case)
            failures_.push_back("* " + name_ + "\n" + out.str());
    }

    static constexpr int max_said_per_case = 5;
    std::mutex mutex_;
    std::string name_;
    int said_of_case_ = 0;
    std::vector<std::string> failures_;
};

REGISTER_LISTENER("failure_summary", 1, failure_summary);

}  // namespace

int main(int argc, char** argv) {
    // Unbuffered: a suite killed at its ctest timeout keeps what it printed (the e2e suite's
    // --duration lines say which cases ended, and when).
    std::cout << std::unitbuf;
    doctest::Context context(argc, argv);
    return context.run();
}
