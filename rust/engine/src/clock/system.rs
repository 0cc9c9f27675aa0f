//! What the OS does to timing, read without privilege: how long sleeps
//! really last, the timer slack, the kernel's NTP state (adjtimex) and the
//! hypervisor (CPUID).

use serde::Serialize;

use super::read::monotonic_ns;

/// Actual durations (ns, on MONOTONIC) of up to `count` relative
/// `clock_nanosleep(CLOCK_MONOTONIC)` sleeps of `request_ns` each, stopping
/// early once `budget_ns` has been spent. At least one sleep is always made.
pub fn sleep_durations(request_ns: u64, count: usize, budget_ns: u64) -> Vec<u64> {
    let req = libc::timespec {
        tv_sec: (request_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (request_ns % 1_000_000_000) as libc::c_long,
    };
    let started = monotonic_ns();
    let mut out = Vec::with_capacity(count);
    while out.len() < count.max(1) && (out.is_empty() || monotonic_ns() - started < budget_ns) {
        let t0 = monotonic_ns();
        // SAFETY: `req` is a valid timespec; a null remainder is allowed.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &req, std::ptr::null_mut()) };
        out.push(monotonic_ns().saturating_sub(t0));
    }
    out
}

/// The calling thread's timer slack (how late the kernel may fire its
/// timers to batch wake-ups), ns, via `prctl(PR_GET_TIMERSLACK)`.
pub fn timer_slack_ns() -> Option<u64> {
    // SAFETY: PR_GET_TIMERSLACK reads a value and takes no pointers.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    (rc >= 0).then_some(rc as u64)
}

/// The kernel's NTP discipline state, read with `adjtimex` (modes = 0: read
/// only, no privilege needed). See adjtimex(2) and RFC 5905.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NtpState {
    /// Clock state: 0 TIME_OK … 5 TIME_ERROR (not synchronised).
    pub state: i32,
    /// Status bits (STA_UNSYNC = 0x40, STA_NANO = 0x2000, …).
    pub status: i32,
    /// The kernel considers the clock synchronised: state is not
    /// TIME_ERROR and STA_UNSYNC is clear.
    pub synchronised: bool,
    /// Frequency offset applied to the clock, ppm.
    pub freq_ppm: f64,
    /// Remaining phase offset being slewed out, ns.
    pub offset_ns: i64,
    /// Maximum / estimated error, µs.
    pub maxerror_us: i64,
    pub esterror_us: i64,
}

/// Read the NTP state; `None` when `adjtimex` fails (e.g. seccomp).
pub fn ntp_state() -> Option<NtpState> {
    // SAFETY: an all-zero timex is valid input (modes = 0 means read only).
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex for the duration of the call.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    let nano = tx.status & libc::STA_NANO != 0;
    Some(NtpState {
        state,
        status: tx.status,
        synchronised: state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
        freq_ppm: tx.freq as f64 / 65536.0,
        offset_ns: if nano {
            tx.offset as i64
        } else {
            tx.offset as i64 * 1000
        },
        maxerror_us: tx.maxerror as i64,
        esterror_us: tx.esterror as i64,
    })
}

/// The hypervisor's vendor signature from CPUID leaf 0x4000_0000
/// ("KVMKVMKVM", "Microsoft Hv", "VMwareVMware", "XenVMMXenVMM", …), or
/// `None` on bare metal (CPUID.1:ECX bit 31 clear) and off x86_64. This is
/// how systemd-detect-virt tells hypervisors apart without /sys or DMI.
pub fn hypervisor_signature() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        #[allow(unused_unsafe)]
        // SAFETY: cpuid exists on every x86_64 CPU and has no memory effects.
        let (leaf1, leaf) = unsafe { (__cpuid(1), __cpuid(0x4000_0000)) };
        if leaf1.ecx & (1 << 31) == 0 {
            return None;
        }
        let bytes: Vec<u8> = [leaf.ebx, leaf.ecx, leaf.edx]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let text = String::from_utf8_lossy(&bytes)
            .trim_matches('\0')
            .to_string();
        (!text.trim().is_empty()).then_some(text)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_last_at_least_what_was_asked() {
        let got = sleep_durations(100_000, 5, 1_000_000_000);
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|&d| d >= 100_000), "{got:?}");
        assert_eq!(sleep_durations(1_000_000, 1000, 0).len(), 1);
    }

    #[test]
    fn hypervisor_signature_is_printable_when_present() {
        if let Some(sig) = hypervisor_signature() {
            assert!(sig.len() <= 12 && !sig.trim().is_empty(), "{sig:?}");
        }
    }

    #[test]
    fn timer_slack_and_ntp_state_are_readable() {
        assert!(timer_slack_ns().is_some());
        if let Some(ntp) = ntp_state() {
            assert!(ntp.freq_ppm.abs() < 1000.0, "{ntp:?}");
        }
    }
}
