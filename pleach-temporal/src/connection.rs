//! Reaching a Temporal service: `HOST:PORT` or a URL, the namespace `default`.

use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};

use crate::DurableError;

/// The namespace durable conversations live in.
pub(crate) const NAMESPACE: &str = "default";

/// The service's URL: `HOST:PORT` is `http://HOST:PORT`; a URL is taken as it is.
pub(crate) fn url(target: &str) -> Result<Url, DurableError> {
    let text = if target.contains("://") {
        target.to_owned()
    } else {
        format!("http://{target}")
    };
    Url::parse(&text).map_err(|error| {
        DurableError::Target(format!("`{target}` is not HOST:PORT or a URL: {error}"))
    })
}

/// A client of the service at `target`.
pub(crate) async fn connect(target: &str) -> Result<Client, DurableError> {
    let options = ConnectionOptions::new(url(target)?)
        .identity(format!("pleach@{}", std::process::id()))
        .build();
    let connection = Connection::connect(options).await.map_err(|error| {
        DurableError::Unreachable(format!("cannot reach Temporal at `{target}`: {error}"))
    })?;
    Client::new(connection, ClientOptions::new(NAMESPACE).build()).map_err(|error| {
        DurableError::Unreachable(format!("cannot use Temporal at `{target}`: {error}"))
    })
}
