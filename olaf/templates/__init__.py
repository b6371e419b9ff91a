"""Package data: text templates that generators fill in (the Wireshark dissector, :mod:`olaf.wireshark`)."""
