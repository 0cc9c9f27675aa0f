//! A request slot of an engine thread, whatever the protocol: an HTTP/1.1
//! connection ([`Conn`]) or a stream of an HTTP/2 connection ([`H2Lane`])
//! or of an HTTP/3 (QUIC) connection ([`H3Lane`]).
//! The closed loop and the open-loop dispatcher drive lanes and never look
//! at the protocol.

use std::time::Duration;

use super::conn::{Conn, Connector, Exchange};
use super::h2::{H2Lane, H2Request};
use super::h3::H3Lane;
use super::recorder::ErrorKind;
use super::server_timing::Parsed;

/// One request slot: sends one request at a time.
pub enum Lane {
    H1(Conn),
    H2(H2Lane),
    H3(H3Lane),
}

impl Lane {
    /// Open the lane's connection now (pre-connecting before load starts).
    /// Ok(true) when this opened a connection, Ok(false) when it was
    /// already open (another HTTP/2 lane opened it).
    ///
    /// # Errors
    /// The connect failure's kind.
    pub async fn open(&mut self, connector: &Connector) -> Result<bool, ErrorKind> {
        match self {
            Lane::H1(c) => c.open(connector).await.map(|()| true),
            Lane::H2(l) => l.open(connector).await.map(|p| p.is_some()),
            Lane::H3(l) => l.open(connector).await.map(|p| p.is_some()),
        }
    }

    /// Send one request and read its response (see [`Conn::exchange`] and
    /// [`H2Lane::exchange`]): `h1` is the HTTP/1.1 request's bytes and
    /// whether it is a HEAD, `h2` its HTTP/2 form (given for HTTP/2 and
    /// HTTP/3 lanes).
    pub async fn exchange(
        &mut self,
        connector: &Connector,
        h1: (&[u8], bool),
        h2: Option<&H2Request>,
        read_timeout: Duration,
    ) -> Exchange {
        match (self, h2) {
            (Lane::H2(l), Some(req)) => l.exchange(connector, req, read_timeout).await,
            // Boxed: the HTTP/3 exchange's future is about 4.7 KB (quinn and
            // h3 state), the others' about 1.6 KB. Inline, it would size every
            // connection task of every protocol (an open-loop pool holds one
            // per connection) for HTTP/3; boxed, HTTP/3 pays one allocation
            // per request instead.
            (Lane::H3(l), Some(req)) => Box::pin(l.exchange(connector, req, read_timeout)).await,
            (Lane::H1(c), _) => c.exchange(connector, h1.0, h1.1, read_timeout).await,
            (Lane::H2(_) | Lane::H3(_), None) => Exchange::new(),
        }
    }

    /// The `Server-Timing` metrics of the last response.
    pub fn server_timing(&self) -> &Parsed {
        match self {
            Lane::H1(c) => c.server_timing(),
            Lane::H2(l) => l.server_timing(),
            Lane::H3(l) => l.server_timing(),
        }
    }

    /// End the lane; true when this closed an open connection.
    pub fn close(&mut self) -> bool {
        match self {
            Lane::H1(c) => c.close(),
            Lane::H2(l) => l.close(),
            Lane::H3(l) => l.close(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_task_is_not_sized_for_http3() {
        // Every pooled connection's task holds this future while it waits
        // for its response: about 1.7 KB for HTTP/1.1 and HTTP/2 (4.8 KB
        // with HTTP/3's future inline).
        let c = Connector {
            addr: "127.0.0.1:9".parse().unwrap(),
            tls: None,
            quic: None,
            connect_timeout: Duration::from_secs(1),
        };
        let mut lane = Lane::H1(Conn::new());
        let f = lane.exchange(&c, (b"", false), None, Duration::from_secs(1));
        assert!(
            std::mem::size_of_val(&f) < 3000,
            "{}",
            std::mem::size_of_val(&f)
        );
    }
}
