// strata-lab serve: the live lab, a page and JSON API driving the real allocators (docs/live-lab.md).
#if STRATA_LAB_HAS_SERVE
#include <memory>

#include "commands.hpp"
#include "server.hpp"
#include "trace_library.hpp"

namespace strata::lab {

namespace {

[[maybe_unused]] const bool registered = register_command(
    {70, "serve", std::vector<std::string_view>{},
     [](CLI::App& app, const shared_options&, const std::string& uses_note) -> std::function<int()> {
         auto o = std::make_shared<serve::serve_options>();
         auto* cmd = app.add_subcommand(
             "serve", "the live lab: a page and JSON API driving the real allocators" + uses_note);
         cmd->add_option("--port", o->port, "port (default 8080; 0: any free port)")
             ->check(CLI::Range(0, 65535));
         cmd->add_option("--bind", o->bind, "address to listen on (default 127.0.0.1)")->type_name("ADDR");
         cmd->add_option("--allow-host", o->allowed_hosts,
                         "also answer to this host name (e.g. this machine's name with --bind 0.0.0.0); "
                         "repeatable")
             ->type_name("NAME");
         auto traces = std::make_shared<std::vector<std::string>>();
         cmd->add_option("--trace", *traces, "a recorded trace for the trace player (repeatable)")
             ->type_name("FILE")
             ->check(CLI::ExistingFile.description(""));
         return [o, traces] {
             serve::register_traces(*traces);
             return serve::serve_command(*o);
         };
     }});

} // namespace

} // namespace strata::lab
#endif
