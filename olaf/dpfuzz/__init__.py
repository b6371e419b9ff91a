"""Fuzzing the Olaf data plane on BMv2 (docs/reliability.md): frame families
(:mod:`olaf.dpfuzz.frames`), the checked batch loop (:mod:`olaf.dpfuzz.run`) and the
command that sets up the switch and runs it (:mod:`olaf.dpfuzz.__main__`)."""
