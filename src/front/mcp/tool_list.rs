//! The gateway's own tools as `tools/list` gives them.

use super::*;

pub(super) fn tools(gateway: &Gateway, max_output_bytes: u64) -> Vec<Tool> {
    let mut tools = gateway_tools(gateway, max_output_bytes);
    for tool in &mut tools {
        let mut schema = Value::Object((*tool.input_schema).clone());
        handles::add_to_schema(&tool.name, &mut schema);
        tool.input_schema = self::schema(schema);
    }
    tools
}

pub(super) fn gateway_tools(gateway: &Gateway, max_output_bytes: u64) -> Vec<Tool> {
    vec![
        Tool::new(
            "execute_code",
            execute_code::description(gateway, max_output_bytes),
            schema(execute_code::input_schema()),
        ),
        Tool::new(
            "wait_execution",
            wait_execution::WAIT_DESCRIPTION,
            schema(wait_execution::wait_schema()),
        ),
        Tool::new(
            "cancel_execution",
            wait_execution::CANCEL_DESCRIPTION,
            schema(wait_execution::cancel_schema()),
        ),
        Tool::new(
            "search_tools",
            search_tools::DESCRIPTION,
            schema(search_tools::input_schema()),
        ),
        Tool::new(
            "save_capability",
            capabilities::SAVE_DESCRIPTION,
            schema(capabilities::save_schema()),
        ),
        Tool::new(
            "list_capabilities",
            capabilities::LIST_DESCRIPTION,
            schema(capabilities::list_schema()),
        ),
        Tool::new(
            "list_state",
            list_state::description(gateway),
            schema(list_state::input_schema()),
        ),
    ]
}
