from pimforge.cli import main

raise SystemExit(main())
