#include "gateway/mcp/mcp_tools.hpp"

#include <cmath>
#include <set>

#include "common/byte_size.hpp"
#include "common/encoding.hpp"
#include "gateway/interpreter/execution_request.hpp"
#include "gateway/interpreter/oversized_result.hpp"
#include "gateway/interpreter/workdir_files.hpp"

namespace callisto::gateway::mcp {

namespace {

const nlohmann::json path_schema = {
    {"type", "string"},
    {"description", "A path relative to the working directory, e.g. \"data/input.csv\"."}};

nlohmann::json object_schema(nlohmann::json properties, nlohmann::json required) {
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)},
            {"additionalProperties", false}};
}

// Unknown keys are refused: a misspelt "timeout" silently ignored would run without one.
bool only_known(const nlohmann::json& args, const std::set<std::string>& known,
                std::string& error) {
    for (auto& [key, value] : args.items())
        if (!known.count(key)) {
            error = "unknown argument \"" + key + "\"";
            return false;
        }
    return true;
}

bool required_string(const nlohmann::json& args, const char* key, std::string& out,
                     std::string& error) {
    if (!args.contains(key)) {
        error = std::string("missing required argument \"") + key + "\"";
        return false;
    }
    if (!args[key].is_string()) {
        error = std::string("\"") + key + "\" must be a string";
        return false;
    }
    out = args[key].get<std::string>();
    return true;
}

bool checked_path(const nlohmann::json& args, std::string& out, std::string& error) {
    if (!required_string(args, "path", out, error)) return false;
    if (auto bad = interpreter::check_relative_path(out)) {
        error = "\"path\": " + *bad;
        return false;
    }
    return true;
}

// "language", optional in every tool; false (with `error`) when present but not one of four.
bool optional_language(const nlohmann::json& args, tool_language& out, std::string& error) {
    if (!args.contains("language") || args["language"].is_null()) return true;
    if (args["language"].is_string())
        out = languages::parse_execution_language(args["language"].get<std::string>());
    if (!out) error = R"("language" must be )" + languages::language_list('"');
    return out.has_value();
}

nlohmann::json language_schema(std::string what) {
    return {{"type", "string"},
            {"enum", languages::language_names(languages::all_execution_languages())},
            {"default", "python"},
            {"description", std::move(what)}};
}

const char* files_language =
    "Whose working directory: \"python\" (the default; bash and sql see the same files) or "
    "\"r\" (the R kernel's own).";

}  // namespace

nlohmann::json tool_definitions(const tool_limits& limits) {
    const auto max_timeout = limits.max_timeout.count();
    nlohmann::json tools = nlohmann::json::array();
    tools.push_back(
        {{"name", "run_code"},
         {"title", "Run code"},
         {"description",
          "Runs code in a persistent, sandboxed Jupyter kernel. language \"python\" (the "
          "default, IPython): variables, imports and files persist between calls of this "
          "session; numpy, pandas and matplotlib are available (figures come back as PNG). "
          "\"bash\": a shell script in the same working directory. \"sql\": SQLite over the "
          "working directory, where each .csv/.tsv/.jsonl file is a table named after the file "
          "(sales.csv is sales) and callisto.db keeps tables you create. \"r\": R in a kernel of "
          "its own, with its own working directory (upload_file with language \"r\" puts files "
          "there). Returns stdout, stderr, the value of the last expression or the query's "
          "table, charts and, on an error, the traceback. There is no network."},
         {"inputSchema",
          object_schema(
              {{"code", {{"type", "string"}, {"description", "The code to run."}}},
               {"language", language_schema("The language of code (default \"python\").")},
               {"timeout_seconds",
                {{"type", "number"},
                 {"exclusiveMinimum", 0},
                 {"maximum", max_timeout},
                 {"description", "Time limit (default " +
                                     std::to_string(limits.default_timeout.count()) +
                                     "). At the limit the code is interrupted (state kept); if it "
                                     "does not stop, the kernel restarts (state lost)."}}},
               {"output_budget",
                {{"type", "integer"},
                 {"minimum", 256},
                 {"maximum", limits.max_output_budget},
                 {"description", "Bytes of stdout, and of stderr, kept (default " +
                                     std::to_string(limits.default_output_budget) +
                                     "): beyond it the first and last half are kept, with a "
                                     "marker saying how much was cut."}}}},
              {"code"})}});
    tools.push_back(
        {{"name", "upload_file"},
         {"title", "Upload a file"},
         {"description",
          "Writes a file into the working directory of run_code (parent directories are "
          "created, an existing file is replaced). Up to " +
              std::to_string(limits.max_upload_bytes) + " bytes."},
         {"inputSchema",
          object_schema({{"path", path_schema},
                         {"content", {{"type", "string"}, {"description", "The file's content."}}},
                         {"language", language_schema(files_language)},
                         {"encoding",
                          {{"type", "string"},
                           {"enum", {"text", "base64"}},
                           {"default", "text"},
                           {"description",
                            "\"text\" (UTF-8, the default) or \"base64\" for binary files."}}}},
                        {"path", "content"})}});
    tools.push_back(
        {{"name", "list_files"},
         {"title", "List files"},
         {"description",
          "Lists the files in the working directory of run_code, recursively, with sizes."},
         {"inputSchema", object_schema({{"include_hidden",
                                         {{"type", "boolean"},
                                          {"default", false},
                                          {"description",
                                           "Also list dot-files and dot-directories (the kernel's "
                                           ".cache, .ipython, .config)."}}},
                                        {"language", language_schema(files_language)}},
                                       nlohmann::json::array())},
         {"annotations", {{"readOnlyHint", true}}}});
    tools.push_back({{"name", "read_file"},
                     {"title", "Read a file"},
                     {"description",
                      "Reads a file from the working directory of run_code: text files as "
                      "text, images as images, other binary files as a base64 resource."},
                     {"inputSchema", object_schema({{"path", path_schema},
                                                    {"language", language_schema(files_language)}},
                                                   {"path"})},
                     {"annotations", {{"readOnlyHint", true}}}});
    tools.push_back(
        {{"name", "restart_context"},
         {"title", "Restart a kernel"},
         {"description",
          "Restarts the kernel: every variable and import is lost, files in "
          "the working directory stay. Use it when the kernel is stuck or broken."},
         {"inputSchema",
          object_schema({{"language", language_schema("Which kernel: \"python\" (the default; "
                                                      "also bash's and sql's) or \"r\".")}},
                        nlohmann::json::array())},
         {"annotations", {{"destructiveHint", true}}}});
    return tools;
}

std::optional<tool_call> parse_tool_call(const nlohmann::json& params, const tool_limits& limits,
                                         std::string& error) {
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
        error = "tools/call needs \"name\": the tool's name";
        return std::nullopt;
    }
    const std::string name = params["name"];
    nlohmann::json args = nlohmann::json::object();
    if (params.contains("arguments") && !params["arguments"].is_null()) {
        if (!params["arguments"].is_object()) {
            error = "\"arguments\" must be an object";
            return std::nullopt;
        }
        args = params["arguments"];
    }
    auto fail = [&](std::string why) {
        error = name + ": " + why;
        return std::nullopt;
    };

    if (name == "run_code") {
        if (!only_known(args, {"code", "language", "timeout_seconds", "output_budget"}, error))
            return fail(error);
        run_code_args a{{}, limits.default_timeout, {}, limits.default_output_budget};
        if (!required_string(args, "code", a.code, error)) return fail(error);
        if (!optional_language(args, a.language, error)) return fail(error);
        if (a.code.size() > limits.max_code_bytes)
            return fail("\"code\" is longer than " + std::to_string(limits.max_code_bytes) +
                        " bytes");
        if (auto why = interpreter::check_code(a.code, "\"code\"")) return fail(*why);
        if (args.contains("timeout_seconds")) {
            const auto& t = args["timeout_seconds"];
            if (!t.is_number()) return fail("\"timeout_seconds\" must be a number");
            const double secs = t.get<double>();
            if (!std::isfinite(secs) || secs <= 0 ||
                secs > static_cast<double>(limits.max_timeout.count()))
                return fail("\"timeout_seconds\" must be above 0 and at most " +
                            std::to_string(limits.max_timeout.count()));
            a.timeout =
                std::chrono::milliseconds(std::max<long long>(1, std::llround(secs * 1000)));
        }
        if (args.contains("output_budget")) {
            const auto& b = args["output_budget"];
            if (!b.is_number_integer() || b.get<std::int64_t>() < 256 ||
                b.get<std::uint64_t>() > limits.max_output_budget)
                return fail("\"output_budget\" must be a whole number of bytes from 256 to " +
                            std::to_string(limits.max_output_budget));
            a.output_budget = b.get<std::size_t>();
        }
        return a;
    }
    if (name == "upload_file") {
        if (!only_known(args, {"path", "content", "encoding", "language"}, error))
            return fail(error);
        upload_file_args a;
        if (!checked_path(args, a.path, error)) return fail(error);
        if (!optional_language(args, a.language, error)) return fail(error);
        if (!required_string(args, "content", a.bytes, error)) return fail(error);
        std::string encoding = "text";
        if (args.contains("encoding")) {
            if (!args["encoding"].is_string())
                return fail("\"encoding\" must be \"text\" or \"base64\"");
            encoding = args["encoding"].get<std::string>();
        }
        if (encoding == "base64") {
            auto decoded = decode_base64(a.bytes);
            if (!decoded) return fail("\"content\" is not valid base64");
            a.bytes = std::move(*decoded);
        } else if (encoding != "text") {
            return fail("\"encoding\" must be \"text\" or \"base64\"");
        }
        if (a.bytes.size() > limits.max_upload_bytes)
            return fail("the file is larger than " + describe_bytes(limits.max_upload_bytes) +
                        " (--upload-limit, at most 16MiB here); upload large files with PUT "
                        "/v1/contexts/{id}/files/{path}");
        return a;
    }
    if (name == "list_files") {
        if (!only_known(args, {"include_hidden", "language"}, error)) return fail(error);
        list_files_args a;
        if (!optional_language(args, a.language, error)) return fail(error);
        if (args.contains("include_hidden")) {
            if (!args["include_hidden"].is_boolean())
                return fail("\"include_hidden\" must be true or false");
            a.include_hidden = args["include_hidden"].get<bool>();
        }
        return a;
    }
    if (name == "read_file") {
        if (!only_known(args, {"path", "language"}, error)) return fail(error);
        read_file_args a;
        if (!checked_path(args, a.path, error)) return fail(error);
        if (!optional_language(args, a.language, error)) return fail(error);
        return a;
    }
    if (name == "restart_context") {
        if (!only_known(args, {"language"}, error)) return fail(error);
        restart_context_args a;
        if (!optional_language(args, a.language, error)) return fail(error);
        return a;
    }
    error = "unknown tool \"" + name + "\"; tools/list names the tools";
    return std::nullopt;
}

}  // namespace callisto::gateway::mcp
