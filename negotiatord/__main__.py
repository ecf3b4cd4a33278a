from negotiatord.cli import main

raise SystemExit(main())
