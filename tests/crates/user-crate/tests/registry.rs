//! The user's tools are in the registry, found without naming linkme, serde or schemars.

#[test]
fn tools_of_a_user_crate_are_registered() {
    // Reference the crate so the linker keeps it (it is otherwise unused by this test binary).
    let _ = user_crate::celsius_to_fahrenheit::NAME;
    let registry = pleach_core::tool_registry();
    for name in [
        "celsius_to_fahrenheit",
        "greet",
        "close_account",
        "private_echo",
    ] {
        assert!(
            registry.contains(name),
            "{name} missing: {:?}",
            registry.names().collect::<Vec<_>>()
        );
    }
    assert_eq!(
        registry
            .get("close_account")
            .and_then(pleach_core::UnifiedToolDefinition::safety_tier),
        Some(pleach_core::SafetyTier::Critical)
    );
    assert_eq!(
        registry
            .get("close_account")
            .map(pleach_core::UnifiedToolDefinition::category),
        Some("accounts")
    );
    assert!(pleach_core::try_tool_registry().is_ok());
}

#[test]
fn input_type_schema_comes_from_its_derive() {
    let greet = user_crate::greet_someone::definition();
    assert_eq!(greet.name(), "greet");
    let schema = greet.input_schema();
    assert_eq!(schema["properties"]["excitement"]["maximum"], 5);
    assert_eq!(schema["required"], pleach_core::serde_json::json!(["name"]));
    assert_eq!(
        greet.output_schema().unwrap()["properties"]["text"]["type"],
        "string"
    );
}
