//! Thin OS helpers: a precise async timer (timerfd), per-thread CPU time and
//! the open-file limit.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;

struct TimerFd(OwnedFd);

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// An async sleep with microsecond precision, built on a Linux `timerfd`
/// registered in tokio's reactor.
///
/// tokio's own timer wheel has 1 ms granularity, which would add up to 1 ms
/// of send lag to every open-loop request; a timerfd wakes the event loop
/// within a few µs of the deadline, at the cost of one `timerfd_settime`
/// and one `read` per wake-up. No busy-waiting.
pub struct PreciseTimer {
    fd: AsyncFd<TimerFd>,
}

impl PreciseTimer {
    /// Create a timer. Must be called inside a tokio runtime with IO enabled.
    ///
    /// # Errors
    /// The OS error from `timerfd_create` or the reactor registration.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the returned fd is checked and owned below.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh, valid descriptor we own.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: TimerFd owns the descriptor and keeps it open for as long
        // as the AsyncFd (which deregisters it before dropping it) lives.
        let fd = unsafe {
            AsyncFd::register_with_interest(TimerFd(owned), tokio::io::Interest::READABLE)
        };
        Ok(Self {
            fd: fd.map_err(io::Error::from)?,
        })
    }

    /// Sleep until `deadline` (returns at once when it has passed).
    ///
    /// # Errors
    /// The OS error from `timerfd_settime` or `read` (not expected).
    pub async fn sleep_until(&mut self, deadline: Instant) -> io::Result<()> {
        let now = Instant::now();
        if deadline <= now {
            return Ok(());
        }
        self.arm(deadline - now)?;
        loop {
            let mut guard = self.fd.readable().await?;
            let mut expirations = 0u64;
            // SAFETY: reads 8 bytes into a u64 from a valid timerfd.
            let n = unsafe {
                libc::read(
                    self.fd.get_ref().as_raw_fd(),
                    (&mut expirations as *mut u64).cast(),
                    8,
                )
            };
            if n == 8 {
                // The expiration count is drained: clear the readiness now,
                // or the next sleep would first see it stale and waste a read.
                guard.clear_ready();
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::WouldBlock {
                return Err(err);
            }
            guard.clear_ready();
        }
    }

    fn arm(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as _,
            },
        };
        // SAFETY: valid fd and a fully initialized itimerspec.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.get_ref().as_raw_fd(),
                0,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// CPU time (user + system) consumed so far by the calling thread, from
/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The soft limit on open files (`ulimit -n`, RLIMIT_NOFILE), or None when
/// unlimited or unknown.
pub fn open_file_limit() -> Option<u64> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid resource and out-pointer.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    (rc == 0 && rl.rlim_cur != libc::RLIM_INFINITY).then_some(rl.rlim_cur)
}

/// File descriptors kept free for the process besides connections.
pub const FD_RESERVE: u64 = 64;

/// Check that `connections` sockets fit under the open-file limit.
///
/// # Errors
/// A message naming `ulimit -n` and the value to raise it to.
pub fn check_open_files(connections: u64) -> Result<(), String> {
    match open_file_limit() {
        Some(limit) if connections + FD_RESERVE > limit => Err(format!(
            "{connections} connections need about {} open files but the open-file limit is {limit}; \
             raise it with `ulimit -n {}` in this shell, or use fewer connections",
            connections + FD_RESERVE,
            connections + FD_RESERVE
        )),
        _ => Ok(()),
    }
}

/// Hand the heap's free pages back to the system (glibc's `malloc_trim(0)`,
/// which since glibc 2.8 releases whole free pages inside every arena, not
/// only at the heap's top), so memory freed by closing connections leaves
/// the resident set instead of waiting in the allocator's free lists. Call
/// it rarely: it walks every arena under its lock. A no-op elsewhere.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precise_timer_is_armed_to_the_microsecond_and_never_wakes_early() {
        // What the timer promises that does not depend on the machine's load: the
        // kernel holds the deadline to the µs (tokio's timer wheel would round it up
        // to its 1 ms tick), and no sleep returns before its deadline. How late a
        // wake-up comes is the scheduler's doing: measured in benchmarks, not here.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut t = PreciseTimer::new().unwrap();
            t.arm(Duration::from_micros(300)).unwrap();
            let mut left = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
            };
            // SAFETY: valid fd and a writable itimerspec.
            let rc = unsafe { libc::timerfd_gettime(t.fd.get_ref().as_raw_fd(), &mut left) };
            assert_eq!(rc, 0);
            assert_eq!(left.it_value.tv_sec, 0);
            assert!(
                left.it_value.tv_nsec <= 300_000,
                "{}",
                left.it_value.tv_nsec
            );
            for _ in 0..20 {
                let deadline = Instant::now() + Duration::from_micros(300);
                t.sleep_until(deadline).await.unwrap();
                assert!(Instant::now() >= deadline);
            }
            t.sleep_until(Instant::now() - Duration::from_millis(1))
                .await
                .unwrap();
        });
    }

    #[test]
    fn thread_cpu_time_advances_with_work() {
        let a = thread_cpu_time();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(thread_cpu_time() > a, "{x}");
    }

    #[test]
    fn open_file_check_names_ulimit() {
        if open_file_limit().is_some() {
            let err = check_open_files(u32::MAX as u64).unwrap_err();
            assert!(err.contains("ulimit -n"), "{err}");
        }
        assert!(check_open_files(1).is_ok());
    }
}
