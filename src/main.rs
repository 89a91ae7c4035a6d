//! The `mcp-sandbox` binary: everything is in the library (`front::cli::entry`), so this crate
//! compiles in under a second.
fn main() {
    mcp_sandbox::front::cli::entry::main()
}
