MyType = "Job"
TargetType = "Machine"
ClusterId = 101
ProcId = 0
GlobalJobId = "submit.example.org#101.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000101
RequestCpus = 2
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 101
ProcId = 1
GlobalJobId = "submit.example.org#101.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000101
RequestCpus = 2
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 101
ProcId = 2
GlobalJobId = "submit.example.org#101.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000101
RequestCpus = 2
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 101
ProcId = 3
GlobalJobId = "submit.example.org#101.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000101
RequestCpus = 2
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 101
ProcId = 4
GlobalJobId = "submit.example.org#101.4#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000101
RequestCpus = 2
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 101
ProcId = 5
GlobalJobId = "submit.example.org#101.5#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000101
RequestCpus = 2
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 102
ProcId = 0
GlobalJobId = "submit.example.org#102.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000102
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 102
ProcId = 1
GlobalJobId = "submit.example.org#102.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000102
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 102
ProcId = 2
GlobalJobId = "submit.example.org#102.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000102
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 102
ProcId = 3
GlobalJobId = "submit.example.org#102.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000102
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 102
ProcId = 4
GlobalJobId = "submit.example.org#102.4#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000102
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 102
ProcId = 5
GlobalJobId = "submit.example.org#102.5#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000102
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 102
ProcId = 6
GlobalJobId = "submit.example.org#102.6#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "alice"
User = "alice@example.org"
QDate = 1790000102
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.alice"

MyType = "Job"
TargetType = "Machine"
ClusterId = 103
ProcId = 0
GlobalJobId = "submit.example.org#103.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000103
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 103
ProcId = 1
GlobalJobId = "submit.example.org#103.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000103
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 103
ProcId = 2
GlobalJobId = "submit.example.org#103.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000103
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 103
ProcId = 3
GlobalJobId = "submit.example.org#103.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000103
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 103
ProcId = 4
GlobalJobId = "submit.example.org#103.4#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000103
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 103
ProcId = 5
GlobalJobId = "submit.example.org#103.5#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000103
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 103
ProcId = 6
GlobalJobId = "submit.example.org#103.6#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000103
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 104
ProcId = 0
GlobalJobId = "submit.example.org#104.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000104
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 104
ProcId = 1
GlobalJobId = "submit.example.org#104.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000104
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 104
ProcId = 2
GlobalJobId = "submit.example.org#104.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000104
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 104
ProcId = 3
GlobalJobId = "submit.example.org#104.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "bob"
User = "bob@example.org"
QDate = 1790000104
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.cms.bob"

MyType = "Job"
TargetType = "Machine"
ClusterId = 105
ProcId = 0
GlobalJobId = "submit.example.org#105.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000105
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"

MyType = "Job"
TargetType = "Machine"
ClusterId = 105
ProcId = 1
GlobalJobId = "submit.example.org#105.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000105
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"

MyType = "Job"
TargetType = "Machine"
ClusterId = 105
ProcId = 2
GlobalJobId = "submit.example.org#105.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000105
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"

MyType = "Job"
TargetType = "Machine"
ClusterId = 105
ProcId = 3
GlobalJobId = "submit.example.org#105.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000105
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"

MyType = "Job"
TargetType = "Machine"
ClusterId = 105
ProcId = 4
GlobalJobId = "submit.example.org#105.4#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000105
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"

MyType = "Job"
TargetType = "Machine"
ClusterId = 105
ProcId = 5
GlobalJobId = "submit.example.org#105.5#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000105
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"

MyType = "Job"
TargetType = "Machine"
ClusterId = 106
ProcId = 0
GlobalJobId = "submit.example.org#106.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000106
RequestCpus = 4
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"
RequestGPUs = 1

MyType = "Job"
TargetType = "Machine"
ClusterId = 106
ProcId = 1
GlobalJobId = "submit.example.org#106.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000106
RequestCpus = 4
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"
RequestGPUs = 1

MyType = "Job"
TargetType = "Machine"
ClusterId = 106
ProcId = 2
GlobalJobId = "submit.example.org#106.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000106
RequestCpus = 4
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"
RequestGPUs = 1

MyType = "Job"
TargetType = "Machine"
ClusterId = 106
ProcId = 3
GlobalJobId = "submit.example.org#106.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "carol"
User = "carol@example.org"
QDate = 1790000106
RequestCpus = 4
RequestMemory = 1024
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_physics.atlas.carol"
RequestGPUs = 1

MyType = "Job"
TargetType = "Machine"
ClusterId = 107
ProcId = 0
GlobalJobId = "submit.example.org#107.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000107
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 107
ProcId = 1
GlobalJobId = "submit.example.org#107.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000107
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 107
ProcId = 2
GlobalJobId = "submit.example.org#107.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000107
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 107
ProcId = 3
GlobalJobId = "submit.example.org#107.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000107
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 107
ProcId = 4
GlobalJobId = "submit.example.org#107.4#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000107
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 107
ProcId = 5
GlobalJobId = "submit.example.org#107.5#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000107
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 108
ProcId = 0
GlobalJobId = "submit.example.org#108.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000108
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 108
ProcId = 1
GlobalJobId = "submit.example.org#108.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000108
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 108
ProcId = 2
GlobalJobId = "submit.example.org#108.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "dave"
User = "dave@example.org"
QDate = 1790000108
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
AccountingGroup = "group_chemistry.dave"
ConcurrencyLimits = "chemlab_license"

MyType = "Job"
TargetType = "Machine"
ClusterId = 109
ProcId = 0
GlobalJobId = "submit.example.org#109.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000109
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 109
ProcId = 1
GlobalJobId = "submit.example.org#109.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000109
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 109
ProcId = 2
GlobalJobId = "submit.example.org#109.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000109
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 109
ProcId = 3
GlobalJobId = "submit.example.org#109.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000109
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 109
ProcId = 4
GlobalJobId = "submit.example.org#109.4#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000109
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 109
ProcId = 5
GlobalJobId = "submit.example.org#109.5#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000109
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 109
ProcId = 6
GlobalJobId = "submit.example.org#109.6#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000109
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 109
ProcId = 7
GlobalJobId = "submit.example.org#109.7#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000109
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 110
ProcId = 0
GlobalJobId = "submit.example.org#110.0#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000110
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 110
ProcId = 1
GlobalJobId = "submit.example.org#110.1#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000110
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 110
ProcId = 2
GlobalJobId = "submit.example.org#110.2#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000110
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 110
ProcId = 3
GlobalJobId = "submit.example.org#110.3#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000110
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 110
ProcId = 4
GlobalJobId = "submit.example.org#110.4#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000110
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 110
ProcId = 5
GlobalJobId = "submit.example.org#110.5#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000110
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"

MyType = "Job"
TargetType = "Machine"
ClusterId = 110
ProcId = 6
GlobalJobId = "submit.example.org#110.6#1790000000"
JobStatus = 1
JobUniverse = 5
Owner = "erin"
User = "erin@example.org"
QDate = 1790000110
RequestCpus = 1
RequestMemory = 4096
RequestDisk = 1048576
JobPrio = 0
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
Rank = 0.0
Cmd = "/usr/bin/simulate"
