//! What a server offers besides its tools — resources, prompts, completion — from an rmcp
//! [`ServerHandler`] of the user's ([`McpServer::features`](crate::McpServer::features)), behind
//! one object-safe trait so [`McpServer`](crate::McpServer) holds any handler without a type
//! parameter. The tool path never goes through it.

use std::future::Future;
use std::pin::Pin;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, ErrorData>> + Send + 'a>>;

/// The non-tool methods of an rmcp [`ServerHandler`], boxed.
pub(crate) trait Features: Send + Sync + 'static {
    /// What the handler declares in `initialize`: its capabilities and instructions.
    fn info(&self) -> ServerConfig;
    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult>;
    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse>;
    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult>;
    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult>;
    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult>;
    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse>;
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter>;
    fn listen(&self, context: SubscriptionContext) -> Answer<'_, ()>;
}

impl<H: ServerHandler> Features for H {
    fn info(&self) -> ServerConfig {
        self.get_info()
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult> {
        Box::pin(ServerHandler::complete(self, request, context))
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse> {
        Box::pin(ServerHandler::get_prompt(self, request, context))
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult> {
        Box::pin(ServerHandler::list_prompts(self, request, context))
    }

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult> {
        Box::pin(ServerHandler::list_resources(self, request, context))
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult> {
        Box::pin(ServerHandler::list_resource_templates(
            self, request, context,
        ))
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse> {
        Box::pin(ServerHandler::read_resource(self, request, context))
    }

    // `resources/subscribe` is what clients before 2026-07-28 use (rmcp marks it legacy).
    #[allow(deprecated)]
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::subscribe(self, request, context))
    }

    #[allow(deprecated)]
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::unsubscribe(self, request, context))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        ServerHandler::accepted_subscription_filter(self, requested)
    }

    fn listen(&self, context: SubscriptionContext) -> Answer<'_, ()> {
        Box::pin(ServerHandler::listen(self, context))
    }
}

/// A server with no features besides its tools: rmcp's defaults answer every other method with
/// "method not found", since its capabilities declare none.
pub(crate) struct ToolsOnly;

impl ServerHandler for ToolsOnly {}

/// `tools` (the server's own capabilities) with what `features` declares besides tools: its
/// resources, prompts, completion and notification extensions. Only what the handler declares is
/// declared.
pub(crate) fn capabilities(
    mut tools: ServerCapabilities,
    features: &ServerCapabilities,
) -> ServerCapabilities {
    tools.resources.clone_from(&features.resources);
    tools.prompts.clone_from(&features.prompts);
    tools.completions.clone_from(&features.completions);
    tools
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ServerCapabilities;

    struct Prompts;

    impl ServerHandler for Prompts {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_prompts().build())
        }
    }

    #[test]
    fn only_what_the_handler_declares_is_declared() {
        let tools = ServerCapabilities::builder().enable_tools().build();
        let merged = capabilities(tools.clone(), &Prompts.info().capabilities);
        assert!(merged.tools.is_some());
        assert!(merged.prompts.is_some());
        assert!(merged.resources.is_none());
        assert!(merged.completions.is_none());
        assert_eq!(
            capabilities(tools.clone(), &ToolsOnly.info().capabilities),
            tools
        );
    }
}
