//! Tests of the per-sample counters: the group-read parser and the
//! multiplexing scale on synthetic words (a seam), and the real kernel's
//! counters on work whose counts are certain (no timing thresholds).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

fn value(counters: &Counters, deltas: &[Option<u64>], e: Event) -> Option<u64> {
    let k = counters.events().iter().position(|x| *x == e)?;
    deltas[k]
}

/// The counters, or None (a skip, said on stderr) when `event` is absent.
fn open_with(event: Event) -> Option<Counters> {
    let c = Counters::open();
    if c.events().contains(&event) {
        return Some(c);
    }
    eprintln!("skipped: {}", c.software_note().unwrap_or(""));
    None
}

#[test]
fn parse_group_maps_values_by_id_in_any_order() {
    // nr=3, enabled, running, then {value, id}: ids 7, 9, 8
    let words = [3, 1000, 500, 11, 7, 33, 9, 22, 8];
    let mut out = [0; 3];
    let times = parse_group(&words, &[7, 8, 9], &mut out).unwrap();
    assert_eq!(out, [11, 22, 33]);
    assert_eq!(
        times,
        GroupRead {
            enabled_ns: 1000,
            running_ns: 500
        }
    );
}

#[test]
fn parse_group_refuses_truncated_or_incomplete_reads() {
    let mut out = [0; 2];
    assert!(parse_group(&[2, 1, 1], &[1, 2], &mut out).is_err());
    assert!(parse_group(&[2, 1, 1, 5, 1, 6], &[1, 2], &mut out).is_err());
    assert!(parse_group(&[1, 1, 1, 5, 1], &[1, 3], &mut out).is_err());
    assert!(parse_group(&[u64::MAX, 1, 1], &[1], &mut out[..1]).is_err());
    assert!(parse_group(&[], &[], &mut []).is_err());
}

#[test]
fn sample_scale_corrects_multiplexing_and_drops_samples_never_counted() {
    let at = |enabled_ns, running_ns| GroupRead {
        enabled_ns,
        running_ns,
    };
    assert_eq!(sample_scale(&at(100, 100), &at(300, 300)), Some(1.0));
    assert_eq!(sample_scale(&at(100, 50), &at(300, 150)), Some(2.0));
    assert_eq!(sample_scale(&at(100, 50), &at(300, 50)), None);
}

#[test]
fn a_refusal_is_explained_by_its_errno() {
    let cause = |errno| refusal_cause(&std::io::Error::from_raw_os_error(errno));
    assert!(cause(libc::ENOENT).contains("no PMU"));
    assert!(cause(libc::EOPNOTSUPP).contains("no PMU"));
    assert!(cause(libc::EACCES).contains("perf_event_paranoid"));
    assert!(cause(libc::EPERM).contains("seccomp"));
    assert_eq!(cause(libc::EINVAL), "unexpected error");
}

#[test]
fn names_are_unique_columns_and_hardware_is_told_apart() {
    let names: std::collections::HashSet<_> = Event::ALL.iter().map(|e| e.name()).collect();
    assert_eq!(names.len(), Event::ALL.len());
    assert!(names.contains("context_switches"));
    let hw: Vec<_> = Event::ALL.iter().filter(|e| e.is_hardware()).collect();
    assert_eq!(hw.len(), 4);
}

#[test]
fn switches_are_always_present_and_software_absence_is_explained() {
    let c = Counters::open();
    assert!(c.events().contains(&Event::VoluntarySwitches));
    assert!(c.events().contains(&Event::InvoluntarySwitches));
    if !c.events().contains(&Event::TaskClock) {
        assert!(c.software_note().unwrap().contains("unavailable"));
    }
}

#[test]
fn user_only_software_events_leave_migrations_out_with_a_note() {
    let c = Counters::open_with(OpenOptions {
        include_kernel: false,
        hardware: false,
    });
    assert!(!c.events().contains(&Event::CpuMigrations));
    assert!(c.software_note().unwrap().contains("cpu_migrations"));
    assert!(c.hardware_note().is_some());
    assert!(!c.events().iter().any(|e| e.is_hardware()));
}

#[test]
fn task_clock_counts_cpu_time_within_the_wall_time() {
    let Some(mut c) = open_with(Event::TaskClock) else {
        return;
    };
    c.start().unwrap();
    let t0 = Instant::now();
    let mut x = 0u64;
    while t0.elapsed() < Duration::from_millis(5) {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    let wall = t0.elapsed().as_nanos() as u64;
    let d = c.stop().unwrap().to_vec();
    let task = value(&c, &d, Event::TaskClock).unwrap();
    assert!(task > 0);
    // the reads sit outside the wall bracket: allow them 1 ms
    assert!(task <= wall + 1_000_000, "task clock {task} > wall {wall}");
}

#[test]
fn page_faults_count_every_fresh_page_touched() {
    let Some(mut c) = open_with(Event::PageFaults) else {
        return;
    };
    const PAGES: usize = 64;
    let page = 4096;
    let len = PAGES * page;
    // SAFETY: a fresh private anonymous mapping, unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: advice on our own mapping (one fault per 4 KiB page, no THP).
    unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    c.start().unwrap();
    for k in 0..PAGES {
        // SAFETY: within the mapping.
        unsafe { std::ptr::write_volatile((p as *mut u8).add(k * page), 1) };
    }
    let d = c.stop().unwrap().to_vec();
    // SAFETY: unmapping what we mapped.
    unsafe { libc::munmap(p, len) };
    let faults = value(&c, &d, Event::PageFaults).unwrap();
    assert!(faults >= PAGES as u64, "{faults} faults for {PAGES} pages");
}

#[test]
fn a_sleep_is_a_voluntary_switch() {
    let mut c = Counters::open();
    c.start().unwrap();
    std::thread::sleep(Duration::from_millis(1));
    let d = c.stop().unwrap().to_vec();
    assert!(value(&c, &d, Event::VoluntarySwitches).unwrap() >= 1);
}

#[test]
fn switches_read_lazily_add_up_to_getrusage_over_mixed_samples() {
    // Samples that sleep (a switch each, certain) and samples that spin: the
    // per-sample switch counts, whether getrusage was skipped or not, sum to
    // getrusage's own difference over the whole run.
    for options in [
        OpenOptions::default(),
        OpenOptions {
            include_kernel: false,
            hardware: false,
        },
    ] {
        let mut c = Counters::open_with(options);
        let (v0, i0) = thread_switches().unwrap();
        let (mut voluntary, mut involuntary) = (0, 0);
        for k in 0..40 {
            c.start().unwrap();
            if k % 4 == 0 {
                std::thread::sleep(Duration::from_micros(50));
            } else {
                std::hint::black_box((0..1000u64).sum::<u64>());
            }
            let d = c.stop().unwrap().to_vec();
            voluntary += value(&c, &d, Event::VoluntarySwitches).unwrap();
            involuntary += value(&c, &d, Event::InvoluntarySwitches).unwrap();
        }
        let (v1, i1) = thread_switches().unwrap();
        assert!(
            voluntary >= 10,
            "{voluntary} voluntary switches for 10 sleeps"
        );
        // switches between samples are in getrusage's difference, not in a sample's
        assert!(voluntary <= v1 - v0 && involuntary <= i1 - i0);
    }
}

#[test]
fn perf_and_getrusage_agree_on_every_sample() {
    let mut c = Counters::open();
    if !c.events().contains(&Event::ContextSwitches) {
        eprintln!("skipped: {}", c.software_note().unwrap_or(""));
        return;
    }
    for k in 0..40 {
        c.start().unwrap();
        if k % 3 == 0 {
            std::thread::sleep(Duration::from_micros(50));
        }
        let d = c.stop().unwrap().to_vec();
        let split = value(&c, &d, Event::VoluntarySwitches).unwrap()
            + value(&c, &d, Event::InvoluntarySwitches).unwrap();
        let perf = value(&c, &d, Event::ContextSwitches).unwrap();
        // a switch inside a read may fall on either side of one of the two counts
        assert!(
            perf.abs_diff(split) <= 1,
            "perf {perf} vs getrusage {split}"
        );
        if k % 3 == 0 {
            assert!(split >= 1);
        }
    }
}

/// Pin the calling thread to `cpu`.
fn pin(cpu: usize) {
    // SAFETY: a cpu_set_t we own, filled with CPU_SET.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0,
            "sched_setaffinity: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[test]
fn a_sample_preempted_by_a_competitor_on_its_cpu_counts_an_involuntary_switch() {
    // Deterministic without timing: this thread and a spinning competitor
    // share one CPU; the sample spins until it sees the competitor's counter
    // move, which it can only see after the competitor ran on that CPU,
    // i.e. after this thread was switched out while runnable.
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0);
    let ticks = Arc::new(AtomicU64::new(0));
    let pinned = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let competitor = {
        let (ticks, pinned, stop) = (ticks.clone(), pinned.clone(), stop.clone());
        std::thread::spawn(move || {
            pin(cpu);
            pinned.store(true, Ordering::SeqCst);
            while !stop.load(Ordering::Relaxed) {
                ticks.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    while !pinned.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    pin(cpu);
    let mut c = Counters::open();
    c.start().unwrap();
    let seen = ticks.load(Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(30);
    while ticks.load(Ordering::SeqCst) == seen && Instant::now() < deadline {
        std::hint::spin_loop();
    }
    let d = c.stop().unwrap().to_vec();
    stop.store(true, Ordering::Relaxed);
    competitor.join().unwrap();
    assert_ne!(
        ticks.load(Ordering::SeqCst),
        seen,
        "the competitor never ran"
    );
    let involuntary = value(&c, &d, Event::InvoluntarySwitches).unwrap();
    assert!(involuntary >= 1, "no involuntary switch counted");
}

#[test]
fn hardware_events_count_where_the_pmu_exists_and_are_absent_elsewhere() {
    let mut c = Counters::open();
    match c.hardware_note() {
        Some(note) => {
            // this VM: one note, and no hardware column (never zeros)
            assert!(note.contains("refused the hardware events"), "{note}");
            assert!(!c.events().iter().any(|e| e.is_hardware()));
        }
        None => {
            const LOOPS: u64 = 1_000_000;
            c.start().unwrap();
            let mut x = 0u64;
            for i in 0..LOOPS {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            let d = c.stop().unwrap().to_vec();
            if let Some(instructions) = value(&c, &d, Event::Instructions) {
                assert!(instructions >= LOOPS, "{instructions} instructions");
            }
            if let Some(cycles) = value(&c, &d, Event::Cycles) {
                assert!(cycles > 0);
            }
        }
    }
}

#[test]
fn read_cost_is_a_finite_positive_figure() {
    let mut c = Counters::open();
    let ns = read_cost_ns(&mut c, 1000).unwrap();
    assert!(ns.is_finite() && ns > 0.0);
}
