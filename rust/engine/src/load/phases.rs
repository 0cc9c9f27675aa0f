//! Per-request phase timings (as h2load's and oha's summaries show them):
//! TCP connect and TLS handshake of the connections requests opened, time to
//! first byte and body transfer of every response, each into its own
//! HdrHistogram of the step ([`Histograms`]).
//!
//! HTTP/3 has no TCP connect: its QUIC handshake (which carries TLS 1.3) is
//! recorded as `tls_handshake` and `connect` is left out.
//!
//! Where a phase is absent it is not recorded: a request on a reused
//! keep-alive connection (or an HTTP/2 stream on an open connection) has no
//! connect or handshake, so those histograms count connections opened by
//! recorded requests, not requests.

use super::conn::{Exchange, Outcome};
use super::recorder::Histograms;
use crate::hdr::record;

fn us(d: std::time::Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// Record the phases of one recorded request's exchange, µs: `connect` and
/// `tls_handshake` when it opened a connection, `ttfb` (request write start
/// → first response byte; HTTP/2: the response HEADERS) when a response
/// began, `body` (first → last byte) when one completed.
pub fn record_phases(h: &mut Histograms, ex: &Exchange) {
    if let Some(hs) = ex.handshake {
        if let Some(connect) = hs.connect {
            record(&mut h.connect, us(connect));
        }
        if let Some(tls) = hs.tls {
            record(&mut h.tls_handshake, us(tls));
        }
    }
    if let Some(first) = ex.first_byte {
        record(
            &mut h.ttfb,
            us(first.saturating_duration_since(ex.write_start)),
        );
        if matches!(ex.outcome, Outcome::Response(_)) {
            record(
                &mut h.body_time,
                us(ex.end.saturating_duration_since(first)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::conn::Handshake;
    use std::time::{Duration, Instant};

    #[test]
    fn phases_are_recorded_only_where_present() {
        let mut h = Histograms::default();
        let t = Instant::now();
        let mut ex = Exchange::new();
        ex.write_start = t;
        ex.first_byte = Some(t + Duration::from_micros(300));
        ex.end = t + Duration::from_micros(1000);
        ex.outcome = Outcome::Response(200);
        record_phases(&mut h, &ex);
        assert_eq!((h.connect.len(), h.tls_handshake.len()), (0, 0));
        assert_eq!(h.ttfb.max(), 300);
        assert_eq!(h.body_time.max(), 700);
        ex.handshake = Some(Handshake {
            connect: Some(Duration::from_micros(50)),
            tls: None,
        });
        record_phases(&mut h, &ex);
        assert_eq!((h.connect.len(), h.tls_handshake.len()), (1, 0));
        ex.handshake = Some(Handshake {
            connect: Some(Duration::from_micros(50)),
            tls: Some(Duration::from_micros(900)),
        });
        ex.outcome = Outcome::Error(crate::load::ErrorKind::ReadTimeout);
        record_phases(&mut h, &ex);
        assert_eq!(
            (h.tls_handshake.len(), h.ttfb.len(), h.body_time.len()),
            (1, 3, 2)
        );
    }
}
