<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1">
<context>
    <name>ThermoCrop</name>
    <message>
        <location filename="../plugin/accuracy_widget.py" line="137"/>
        <source>Field with the map&apos;s confidence (crop_conf): the report then shows how often parcels of each confidence are right (a reliability diagram) and the expected calibration error. Empty: no reliability.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/accuracy_widget.py" line="180"/>
        <source>Confidence</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/accuracy_widget.py" line="315"/>
        <source>; expected calibration error {ece:.3f}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="43"/>
        <source>ThermoCrop: calibrate on {layer}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="113"/>
        <source>No free model file name in {folder}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="87"/>
        <source>Calibrate on these reference parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="88"/>
        <source>Fit the model&apos;s calibration (its confidence and prediction sets) on the layer&apos;s parcels whose reference class is filled, classified from the Classify tab&apos;s scenes and weather; the calibrated model is saved beside the project and chosen for the next classification</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="94"/>
        <source>Temperature scaling (labels unchanged)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="95"/>
        <source>Vector scaling (a temperature and a bias per class)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="96"/>
        <source>Temperature scaling divides the log-probabilities by one number and keeps every label; vector scaling also corrects how often the model names each class on your fields, for the whole season and each stage of it, and can change labels, most early in the season</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="106"/>
        <source>GDD floor: </source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="107"/>
        <source>GDD floor: the model&apos;s own</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="109"/>
        <source>Each parcel&apos;s acquisitions before this many GDD are left out of its classification where it has one from then on, and the calibration is fitted so; 0: none. The shipped L1C model leaves out those before 550 GDD, whose winter scenes misled it on real fields (docs/in-season.md)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/status_panel.py" line="49"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="112"/>
        <source>Choose the layer with the reference parcels on this tab.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="114"/>
        <source>Choose the reference class field of {layer}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="410"/>
        <source>Tick or add the Sentinel-2 scenes on the Classify tab first.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="412"/>
        <source>Choose the daily temperature file (or a weather service) on the Classify tab first.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="176"/>
        <source>Not calibrated: no file was chosen for the calibrated model.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="185"/>
        <source>Calibrated model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="207"/>
        <source>ThermoCrop model (*.tcm)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="200"/>
        <source>Calibrating on the reference parcels of {layer} …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="209"/>
        <source>Calibration cancelled; no model was written.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="216"/>
        <source> Only the {n} features the layer&apos;s filter shows were used ({subset}); clear the filter to calibrate on every reference parcel.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="219"/>
        <source> Only the {n} selected features were used; clear the selection to calibrate on every reference parcel.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="223"/>
        <source>Calibration failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="231"/>
        <source>{before:.3f} with the model&apos;s own calibration</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="232"/>
        <source>{before:.3f} uncalibrated</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/calibrate_panel.py" line="233"/>
        <source>Calibrated on {n} reference parcels ({counts}): temperature {t:.2f}, calibration error {before} -&gt; {after:.3f}. Saved to {path} and chosen for the next classification.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog.py" line="41"/>
        <source>Give the address of the STAC API (http:// or https://) for &apos;Another STAC API&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog.py" line="65"/>
        <source>The authentication configuration {id} cannot be loaded; choose another one in QGIS&apos;s authentication manager (Settings &gt; Options &gt; Authentication).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog.py" line="68"/>
        <source>The authentication configuration {name} is of the {method} method; use a Basic one (user name and password).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog.py" line="78"/>
        <source>cloud ?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog.py" line="78"/>
        <source>cloud {c:.1f} %</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog.py" line="86"/>
        <source>{items} items on {dates} dates, tiles {tiles}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog.py" line="86"/>
        <source>unknown</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_search.py" line="48"/>
        <source>ThermoCrop: search a catalogue</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="61"/>
        <source>Search a catalogue (instead of scene files)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="69"/>
        <source>Find Sentinel-2 L2A scenes over the parcel layer in a STAC catalogue; only the parts of the images that hold parcels are read, and kept in the cache.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="150"/>
        <source>Catalogue</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="84"/>
        <source>https://…/v1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="85"/>
        <source>The address of the STAC API (its landing page)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="86"/>
        <source>STAC API</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="92"/>
        <source>Calendar year searched (1 January to 31 December)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="98"/>
        <source>Largest cloud cover of an item (eo:cloud_cover)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="100"/>
        <source>clouds ≤</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="102"/>
        <source>Season</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="105"/>
        <source>Credentials</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="106"/>
        <source>Search</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="118"/>
        <source>The items found: date, tile and cloud cover; all of them are used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="133"/>
        <source>A Basic configuration of QGIS&apos;s authentication manager: S3 access key and secret for the Copernicus Data Space, or a Planetary Computer subscription key as password. Empty: the environment&apos;s variables.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="175"/>
        <source>Choose a parcel layer to search a catalogue over.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="190"/>
        <source>Searching…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="191"/>
        <source>Searching {catalog} for the scenes of {season} over {layer} …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="200"/>
        <source>Search cancelled.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="203"/>
        <source>Search failed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="204"/>
        <source>The catalogue search failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="208"/>
        <source>The search found no scenes; widen the season or the cloud limit.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="210"/>
        <source>Found {summary}; they are the scenes of the next run.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/catalog_widget.py" line="223"/>
        <source>No scenes found.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="64"/>
        <source>pyproject.toml has no [project] dependencies list.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="81"/>
        <source>pyproject.toml has no readable [project] dependencies list: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="89"/>
        <source>{spec!r} in pyproject.toml is not a pip requirement.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="102"/>
        <source>{path} cannot be read ({error}); reinstall the ThermoCrop plugin.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="116"/>
        <source>pyproject.toml pins no version of {name}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="149"/>
        <source>ThermoCrop needs Python 3.9 or newer; this QGIS runs Python {version}. Install QGIS 3.22 or newer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="152"/>
        <source>PyTorch publishes no wheels for Windows on ARM; run QGIS for x86-64 (it runs emulated on Windows on ARM).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="157"/>
        <source>PyTorch&apos;s last release for Intel Macs (torch {torch}) has no wheels for Python {version}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="198"/>
        <source>install the OSGeo4W package {package} (built on QGIS&apos;s GDAL) with the OSGeo4W setup of your QGIS: run its bin\setup.bat (or the OSGeo4W network installer, Advanced Install) as administrator, e.g. setup.bat -q -k -P {package}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="203"/>
        <source>it comes with the official QGIS macOS package; reinstall QGIS from qgis.org (a QGIS built with Homebrew or MacPorts needs its own package, e.g. {package})</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="206"/>
        <source>Debian/Ubuntu: apt install {package}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="235"/>
        <source>numpy comes with QGIS; reinstall QGIS</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="403"/>
        <source>ThermoCrop needs these Python packages, which are missing:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="419"/>
        <source>Install them from the ThermoCrop dock (&apos;Install missing packages&apos;), or run with QGIS&apos;s Python: {command}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="468"/>
        <source>Could not check the packages with {python}: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="472"/>
        <source>Checking the packages with {python} stopped (exit code {code}): {output}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="482"/>
        <source>ThermoCrop could not check that its packages import: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="484"/>
        <source>These Python packages are installed but do not import (checked in a new Python process with QGIS&apos;s path):</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependencies.py" line="488"/>
        <source>All ThermoCrop requirements are installed: {modules} import in a new Python process with QGIS&apos;s path. If this QGIS session still fails to import one, it loaded an older copy before they were installed: restart QGIS.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="60"/>
        <source>pip is missing; running {command}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="72"/>
        <source>{python} has no pip and ensurepip could not install it ({output}). Windows: add the OSGeo4W package python3-pip; Debian/Ubuntu: apt install python3-pip.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="246"/>
        <source>Already in QGIS&apos;s Python in the same version, removed from {folder}: {names}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="254"/>
        <source>Checking that {modules} import in a new Python process …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="258"/>
        <source>(the check)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="260"/>
        <source>pip finished, but these packages do not import in a new Python process with QGIS&apos;s path:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="265"/>
        <source>All of them import.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="272"/>
        <source>Packages installed; every requirement imports in a new Python process with QGIS&apos;s path.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="274"/>
        <source>The packages were installed, but some do not import:
{tail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="274"/>
        <source>pip finished</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="277"/>
        <source>Installation cancelled.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="278"/>
        <source>pip failed ({code}); its output is in the ThermoCrop log:
{tail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dependency_install.py" line="297"/>
        <source>Installing ThermoCrop packages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layer_writer.py" line="74"/>
        <source>{field} is longer than a shapefile field name may be ({n} characters)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layer_writer.py" line="77"/>
        <source>the probability fields (p_&lt;class&gt;, crop_margin, crop_entropy) do not fit shapefile field names</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layer_writer.py" line="98"/>
        <source>{layer} cannot be edited; write a new layer file instead.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layer_writer.py" line="107"/>
        <source>ThermoCrop classification</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layer_writer.py" line="125"/>
        <source>Saving {layer} failed: {errors}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layer_writer.py" line="177"/>
        <source>The parcel layer {layer}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="155"/>
        <source>a {provider} web or database layer, not a file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="158"/>
        <source>not a local file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="186"/>
        <source>cannot be read: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="191"/>
        <source>holds only {bands}: tick it together with the product&apos;s other band files</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="194"/>
        <source>{count} bands without band names: {problem}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="197"/>
        <source>a scene classification (SCL) file; it is read with its scene</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="198"/>
        <source>{count} band(s), none of them a Sentinel-2 band (a DEM or another raster?)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/python_interpreter.py" line="101"/>
        <source>; tried {candidates}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/python_interpreter.py" line="102"/>
        <source> under {prefix}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/python_interpreter.py" line="103"/>
        <source>Cannot find the Python {version} interpreter QGIS runs on{detail}. Install the packages by hand (see docs/install.md).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/shell.py" line="60"/>
        <source>ThermoCrop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/qgis_plugin.py" line="57"/>
        <source>Classify parcels with ThermoCrop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/qgis_plugin.py" line="85"/>
        <source>&amp;ThermoCrop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/qgis_plugin.py" line="62"/>
        <source>Missing Python packages: {names}. Open the ThermoCrop dock to install them.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="36"/>
        <source>ThermoCrop: accuracy through the season on {layer}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="49"/>
        <source>No free folder name in {folder}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="74"/>
        <source>Accuracy through the season</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="75"/>
        <source>Classify the layer&apos;s parcels whose reference class is filled as of each acquisition of the Classify tab&apos;s scenes, and show the overall accuracy, macro F1 and each class&apos;s F1 against the date and the growing degree days; the tables and the figure are saved beside the project</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="157"/>
        <source>Scoring the reference parcels of {layer} as of each acquisition …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="166"/>
        <source>In-season accuracy cancelled; nothing was written.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="171"/>
        <source>In-season accuracy failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="176"/>
        <source>Only the {n} selected features were scored; clear the selection to score every reference parcel.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="192"/>
        <source>Open the figure full size</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="205"/>
        <source>{model} on {n} reference parcels, {t} acquisitions: whole-season overall accuracy {oa:.1%}, macro F1 {f1:.3f}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="210"/>
        <source>It first reaches {share} % of that on {date} ({gdd:.0f} GDD).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="216"/>
        <source>A run as of a date before {gdd:,.0f} GDD uses {inseason} instead; choose it as the model to score it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/season_panel.py" line="218"/>
        <source>Tables and figure in {folder}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="172"/>
        <source>{task}: cancelling…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="210"/>
        <source>the reference parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="248"/>
        <source>ThermoCrop: classify parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="339"/>
        <source>the parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="394"/>
        <source>ThermoCrop: explain a parcel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="414"/>
        <source>Feature {fid} is no longer in {layer}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="141"/>
        <source>ThermoCrop: train a model on {layer}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="103"/>
        <source>Labelled parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="234"/>
        <source>Polygon layer whose parcels carry a crop label or code</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="236"/>
        <source>Field of each parcel&apos;s crop label (class names or crop codes); parcels with an empty value are left out</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="240"/>
        <source>Field of each parcel&apos;s spatial block (e.g. a 10 km grid cell): training, validation and test are split by block. Empty: a random split</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="245"/>
        <source>Map national crop codes to classes with the paper&apos;s table for France, Denmark or Austria; codes not in it become &apos;unknown&apos;</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="250"/>
        <source>Layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="32"/>
        <source>Label field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="252"/>
        <source>Block field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="253"/>
        <source>Crop codes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="255"/>
        <source>Training</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="263"/>
        <source> (recommended)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="267"/>
        <source>epochs</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="267"/>
        <source>steps per epoch</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="267"/>
        <source>parcels per step</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="277"/>
        <source>empty: beside the project</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="282"/>
        <source>empty: from scratch</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="283"/>
        <source>A model to start from (fine-tuning): with a few dozen labelled parcels per class, starting from the shipped model is far better than from scratch. Its variant, bands and settings are kept, and its classes when yours are among them. Empty: random weights.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="287"/>
        <source>Shipped model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="288"/>
        <source>Start from the model shipped with the plugin</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="292"/>
        <source>Start from</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="293"/>
        <source>Variant</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="294"/>
        <source>Budget</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="296"/>
        <source>Model file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/shell.py" line="76"/>
        <source>Train</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="306"/>
        <source>Uses the scenes and weather of the Classify tab; the new model is saved beside the project and chosen for the next classification.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="379"/>
        <source>{steps:,} steps of {batch} parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="383"/>
        <source> for each member of the model started from; the time is measured and shown before the training starts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="386"/>
        <source>; about {time} at the {ms:.0f} ms per step measured here last time</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="389"/>
        <source>; the time is measured and shown before the training starts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="399"/>
        <source>Choose the labelled parcel layer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="402"/>
        <source>Choose the field of {layer} that holds the crop labels.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="406"/>
        <source>The label and block fields are the same; choose the block field or leave it empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="416"/>
        <source>The model to start from, {path}, does not exist; choose a .tcm file or clear the field to train from scratch.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="428"/>
        <source>{path} exists (a training into {out} writes it); choose a new model file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="447"/>
        <source>Save the project first, or choose the model file: {layer} is no file layer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="464"/>
        <source>Extracting the labelled parcels of {layer} …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="472"/>
        <source>Training: {estimate}. Cancel stops it and leaves nothing behind.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="480"/>
        <source>Training cancelled; no model or dataset was written.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="483"/>
        <source>Training failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="490"/>
        <source>Model saved to {path} and chosen for the next classification{scores}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="493"/>
        <source>Only the {n} selected features were used; clear the selection to train on every labelled parcel.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="496"/>
        <source>It carries no calibration (its validation blocks held too few labelled parcels): its confidence is the network&apos;s raw probability and runs with it make no prediction sets. Calibrate it on the Accuracy tab with reference parcels.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="500"/>
        <source>Trained {path}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="506"/>
        <source>{n:.0f} s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="508"/>
        <source>{n:.0f} min</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/train_panel.py" line="509"/>
        <source>{n:.1f} h</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/weather_task.py" line="43"/>
        <source>ThermoCrop: temperatures from {service}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/weather_task.py" line="52"/>
        <source>No scene dates to fetch temperatures for; choose the scenes first.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/widgets.py" line="42"/>
        <source>dataset folders, separated by &apos;;&apos;</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/widgets.py" line="51"/>
        <source>Add a dataset folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/widgets.py" line="57"/>
        <source>Dataset folder (from Export training data)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/accuracy_tab.py" line="27"/>
        <source>Accuracy assessment: {message}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/accuracy_tab.py" line="29"/>
        <source>Accuracy assessment finished; the report is on the Accuracy tab.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="111"/>
        <source>Parcels per class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="116"/>
        <source>Class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="141"/>
        <source>Parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="116"/>
        <source>Share</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="121"/>
        <source>colour by class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="121"/>
        <source>colour by confidence</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="122"/>
        <source>The result layer&apos;s style: class colours, or confidence from purple (unsure) to yellow (sure)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="126"/>
        <source>only below</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="127"/>
        <source>Show only the parcels whose confidence is below the threshold (a filter on the result layer; untick to show all)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="142"/>
        <source>only sets of several classes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="143"/>
        <source>Show only the parcels whose prediction set holds more than one class (crop_set_size above 1: the label is in doubt at the chosen coverage)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="147"/>
        <source>Field-visit list…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="148"/>
        <source>Write the parcels in doubt (a set of several classes, or a confidence below the threshold when &apos;only below&apos; is ticked), most doubtful first, as a CSV with a point in each parcel, and add it to the project as a layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="220"/>
        <source>The scene {path} does not exist; untick it or add it again.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="223"/>
        <source>Checking the inputs …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="241"/>
        <source>Cannot write the prediction sets into {layer}: {problems}. Untick &apos;Prediction sets&apos; or write a new layer file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="278"/>
        <source>Not started: {reason}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="261"/>
        <source>Not started: {path} exists and is not to be replaced.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="272"/>
        <source>Not started: the fields exist and are not to be overwritten.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="357"/>
        <source>Fetching the daily temperatures of {layer}'s parcels from {service} …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="424"/>
        <source>The parcel layer was removed while classifying; nothing was written.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="427"/>
        <source>Cancelled; nothing was written and the layer was not changed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="373"/>
        <source>No temperatures from {service}: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="223"/>
        <source>Temperatures from {service}: {path}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="390"/>
        <source>Classifying {n} parcels of {layer} …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="180"/>
        <source>Cancelling…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="430"/>
        <source>The partitions written so far stay in {folder}; tick &apos;Resume the interrupted run&apos; and classify again to take the run up.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="435"/>
        <source>Classification failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="440"/>
        <source>{layer} (classified)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="443"/>
        <source>QGIS cannot open the written file {path}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="444"/>
        <source>the new layer {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="449"/>
        <source>{layer} (saved)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="450"/>
        <source>{layer} (one edit of the running edit session; Undo reverts it)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="453"/>
        <source>Writing the result failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="467"/>
        <source>Classified {done} of {n} parcels ({unknown} unknown) into {where}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="518"/>
        <source>This result has no prediction sets: classify with a calibrated model and &apos;Prediction sets&apos; ticked</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="525"/>
        <source>{qml} exists and was left as it is.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="527"/>
        <source>Style saved to {qml}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="531"/>
        <source>below 0.4</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="531"/>
        <source>0.4 to 0.6</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="531"/>
        <source>0.6 to 0.8</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="531"/>
        <source>0.8 and above</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="531"/>
        <source>not classified</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="562"/>
        <source>{layer} is being edited; save or discard the edits to filter it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="566"/>
        <source>{layer} cannot be filtered by its provider.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="583"/>
        <source>Classify first: the field-visit list is made from the result layer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="602"/>
        <source>The field-visit list was not written: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="607"/>
        <source>{layer} field visits</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="610"/>
        <source>{path} was written, but QGIS cannot open it as a layer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="613"/>
        <source>a set of several classes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="614"/>
        <source>a set of several classes or a confidence below {threshold:.2f}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="615"/>
        <source>{n} parcels to visit ({why}), most doubtful first: {path}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="638"/>
        <source>Field-visit list</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="638"/>
        <source>CSV (*.csv)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/classify_tab.py" line="642"/>
        <source>{names} already exist(s). Overwrite?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="22"/>
        <source>Advanced: partitioned run (Dask)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="27"/>
        <source>Worker processes of a Dask cluster started on this computer for the run, which classify the partitions side by side; 1: the run stays in QGIS</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="29"/>
        <source>Local workers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="31"/>
        <source>tcp://HOST:PORT (empty: this computer)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="32"/>
        <source>Run the partitions on a Dask cluster started apart (SLURM, Kubernetes, &apos;dask scheduler&apos;); the run folder and the input files must be at the same paths on every worker</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="35"/>
        <source>Scheduler</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="38"/>
        <source>empty: beside the output</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="39"/>
        <source>Where the partitions are written as they finish (removed once the result is written); giving one runs the partitions even in QGIS, so that a cancelled run can be resumed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="42"/>
        <source>Run folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="43"/>
        <source>Resume the interrupted run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/cluster_box.py" line="44"/>
        <source>Take up a cancelled run from the partitions its run folder holds: only the missing ones are computed (same inputs and settings)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="58"/>
        <source>Click a parcel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="60"/>
        <source>Then click a parcel of the classified layer on the map to explain it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="63"/>
        <source>Explain the selected</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="64"/>
        <source>Explain the one selected parcel of the classified layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="74"/>
        <source>A field of the parcels with their known (reference) class, shown beside the prediction; empty: none</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="76"/>
        <source>Reference</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="78"/>
        <source>Click a parcel of the classified layer (or select one) to see its NDVI series against the calendar and against growing degree days, and the model&apos;s class probabilities.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="117"/>
        <source>Reading the parcel's pixels …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="125"/>
        <source>Explaining was cancelled.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="128"/>
        <source>Cannot explain this parcel: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="135"/>
        <source>Reference: {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="135"/>
        <source>none given</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="161"/>
        <source>against calendar date</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="166"/>
        <source>growing degree days (°C·d)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="168"/>
        <source>against thermal time</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="182"/>
        <source>class probability, brought to the class shares</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="182"/>
        <source>class probability</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="193"/>
        <source> of {layer}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="227"/>
        <source>Choose a parcel layer (or classify) first.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="234"/>
        <source>Click a parcel of {layer} on the map.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="253"/>
        <source>Select exactly one parcel of {layer} to explain ({n} selected).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="255"/>
        <source>Select exactly one parcel to explain ({n} selected).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/explain_tab.py" line="264"/>
        <source>Choose the scenes and the weather file on the Classify tab first.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="88"/>
        <source>Choose a parcel layer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="90"/>
        <source>No feature of {layer} is selected; select parcels or untick &apos;Selected features only&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="93"/>
        <source>Search the catalogue first (Search), or untick &apos;Search a catalogue&apos; to use scene files.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="95"/>
        <source>Tick or add at least one Sentinel-2 scene.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="97"/>
        <source>Choose a daily temperature file, or a weather service under &apos;Weather&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="99"/>
        <source>The class, confidence and status fields need three different names.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="109"/>
        <source>Class shares need every parcel at once: run in one process (Advanced) or clear the class shares.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="112"/>
        <source>Resuming needs the run folder of the interrupted run: {layer} is not a file layer, so give the run folder under &apos;Advanced&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="116"/>
        <source>{layer} is not a file layer; choose the new layer file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="119"/>
        <source>{layer} is read-only; choose &apos;New layer file&apos; to write the result.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/form.py" line="123"/>
        <source>Cannot write into {layer}: {problems}. Choose other field names or a new layer file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="135"/>
        <source>Input</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="139"/>
        <source>Polygon layer of the project whose parcels are classified</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="142"/>
        <source>Selected features only</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="150"/>
        <source>Ticked scenes are used: the project&apos;s Sentinel-2 rasters and added files or folders</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="152"/>
        <source>Scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="154"/>
        <source>Add files…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="155"/>
        <source>Add Sentinel-2 products: .zip or .SAFE (choose its MTD_MSIL*.xml), or GeoTIFF / JPEG 2000 files</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="157"/>
        <source>Add folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="158"/>
        <source>Add a folder: every product and raster in it (and below) is read</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="159"/>
        <source>Remove</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="160"/>
        <source>Remove the selected files or folders added by hand (a project layer stays listed: untick it)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="162"/>
        <source>Clear</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="163"/>
        <source>Remove every file and folder added by hand</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="186"/>
        <source>Where the daily temperatures come from: a file, or a weather service fetched for the parcels when the run starts and kept in the cache (Open-Meteo needs no key; the Copernicus CDS needs CDSAPI_URL / CDSAPI_KEY in the environment)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="193"/>
        <source>Temperatures (*.nc *.nc4 *.csv);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="194"/>
        <source>Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="196"/>
        <source>Weather</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="205"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="208"/>
        <source>empty: the shipped model for the scenes&apos; level</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="218"/>
        <source>Output</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="220"/>
        <source>New layer file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="221"/>
        <source>Write the parcels with the result fields to a new file; the parcel layer is not changed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="223"/>
        <source>Fields of the parcel layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="224"/>
        <source>Add the result fields to the parcel layer and save it (in a running edit session: one undoable edit)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="233"/>
        <source>GeoPackage (*.gpkg);;Shapefile (*.shp);;GeoJSON (*.geojson);;FlatGeobuf (*.fgb)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="65"/>
        <source>Class field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="66"/>
        <source>Confidence field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="67"/>
        <source>Status field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="246"/>
        <source>Probabilities, margin, entropy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="247"/>
        <source>Also write p_&lt;class&gt; for every class, crop_margin (best minus second best probability) and crop_entropy (0 sure .. 1 undecided)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="250"/>
        <source>Prediction sets, coverage</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="251"/>
        <source>Also write crop_set (the classes that hold the parcel&apos;s true class with the chosen chance, most probable first) and crop_set_size; needs a calibrated model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="262"/>
        <source>The chance that a parcel&apos;s set holds its true class (0.90: nine parcels in ten); a higher coverage gives larger sets</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="270"/>
        <source>Classify as of</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="271"/>
        <source>Leave out the scenes acquired after this date and log the season&apos;s status on it (unticked: every scene, up to the last)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="282"/>
        <source>When each label was decided</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="283"/>
        <source>Also write crop_decided, the acquisition from which the label no longer changes and keeps a confidence of 0.8, and crop_decided_gdd, the parcel&apos;s GDD then</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="287"/>
        <source>CSV files (*.csv)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="288"/>
        <source>optional CSV</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="289"/>
        <source>A CSV file &apos;class,share&apos; by the model&apos;s class names, with the crops&apos; shares of the parcels known from elsewhere (last year&apos;s declarations, statistics): the probabilities are brought to them before labels and sets are made</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="292"/>
        <source>Class shares</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="312"/>
        <source>empty: {name} beside the parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="312"/>
        <source>choose a file (.gpkg, .shp, .geojson, .fgb)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="381"/>
        <source>Project layers stay listed; untick them to leave them out of the run.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="395"/>
        <source>Sentinel-2 scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="399"/>
        <source>Folder of Sentinel-2 scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="148"/>
        <source>Search a catalogue</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="465"/>
        <source>fetched from {service} when the run starts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="589"/>
        <source>No model at {path}; choose a .tcm file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="594"/>
        <source>Model not available: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="597"/>
        <source>not recorded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="605"/>
        <source>shipped, for {level} scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/input_widgets.py" line="608"/>
        <source>leaves out each parcel&apos;s acquisitions before {gdd} GDD (its GDD floor)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/status_panel.py" line="47"/>
        <source>Classify</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/shell.py" line="74"/>
        <source>Explain</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/shell.py" line="75"/>
        <source>Accuracy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/status_panel.py" line="70"/>
        <source>Install missing packages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/status_panel.py" line="104"/>
        <source>Installing into {folder} …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock/train_tab.py" line="34"/>
        <source>Model {name} trained and chosen for the next classification.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="119"/>
        <source>Choose both the map (predicted) class field and the reference class field.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="121"/>
        <source>The map and reference fields are the same field; choose the field holding the reference (ground truth) classes.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="129"/>
        <source>The class-area table {table!r} does not exist; choose a CSV file or leave it empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="166"/>
        <source>The classified layer could not be read; check INPUT.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="174"/>
        <source>The layer {layer} has no field {name!r} ({what}); its fields are {fields}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="181"/>
        <source>Map class areas from the layer need polygons; choose the parcel count weighting, give CLASS_AREAS or choose no weighting.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="206"/>
        <source>{n} reference units: overall accuracy {oa}, kappa {kappa}, macro F1 {f1}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="211"/>
        <source>Area-adjusted overall accuracy {estimate} (95 %)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/accuracy_assessment.py" line="215"/>
        <source>Expected calibration error (10 bins) of {field}: {ece} over {n} units</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="3"/>
        <source>Crop classification</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="116"/>
        <source>{name} needs {modules}, which this QGIS cannot import.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="133"/>
        <source>QGIS 3.22 cannot open the GeoParquet file {path}, and {algorithm} needs a layer QGIS reads: save it as a GeoPackage first (with geopandas: read_parquet, then to_file), or use Classify parcels, Export training data or Growing degree days per parcel, which read it themselves.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="141"/>
        <source>Incorrect parameter value for {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="190"/>
        <source>Cancelled: {reason}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="244"/>
        <source>The parcel layer {problem}; assign the right one first (Layer Properties &gt; Source, or Assign projection; a shapefile needs its .prj).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="258"/>
        <source>The layer {layer} has no field {name!r} (LABEL_FIELD); its fields are {fields}. Choose the field that holds the classes.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="218"/>
        <source>Inputs checked in {seconds} s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="345"/>
        <source>Give either the temperature file {path!r} or the weather service {service}, not both.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="350"/>
        <source>Give a daily temperature file (WEATHER), or choose a weather service (WEATHER_SERVICE).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="352"/>
        <source>temperature file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="406"/>
        <source>STAC items {path}: {scenes}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="426"/>
        <source>Give either scene files (&apos;{scenes}&apos;, &apos;{folder}&apos;) or saved STAC items (&apos;{stac}&apos;), not both.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="434"/>
        <source>The STAC items file {path!r} does not exist; choose the .json file &apos;Search a catalogue&apos; wrote.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="437"/>
        <source>{path!r} is not a STAC item collection; choose the .json file &apos;Search a catalogue&apos; wrote.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="441"/>
        <source>The scene folder {folder!r} does not exist; choose an existing folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="445"/>
        <source>Give Sentinel-2 scenes: &apos;{scenes}&apos; (SCENES, layers or files), &apos;{folder}&apos; (SCENE_FOLDER){stac}; one of them is required.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="456"/>
        <source>{dates} dates from {products} products</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="472"/>
        <source>The M (measure) values of the parcels are not written: {driver} files cannot hold them. Write a .gpkg, .shp, .fgb or .csv file to keep them.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="478"/>
        <source>Writing feature {fid} failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="501"/>
        <source>The {what} {path!r} does not exist; choose an existing file or folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/inseason_accuracy.py" line="95"/>
        <source>The model bundle {model!r} does not exist; choose a .tcm file or leave it empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/inseason_accuracy.py" line="128"/>
        <source>The reference layer could not be read; check INPUT.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/calibrate_model.py" line="157"/>
        <source>Calibrated ({method}) on {n} reference parcels: temperature {t:.3f}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/calibrate_model.py" line="159"/>
        <source>Reference parcels by class: {counts}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/inseason_accuracy.py" line="146"/>
        <source>Left out (classes the model does not know): {counts}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/calibrate_model.py" line="164"/>
        <source>Expected calibration error (10 bins): {before:.3f} uncalibrated, {after:.3f} after</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/calibrate_model.py" line="167"/>
        <source>With the model&apos;s own calibration: {current:.3f}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/calibrate_model.py" line="168"/>
        <source>Model written to {path}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="184"/>
        <source>The class, confidence and status fields need three different, non-empty names.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="214"/>
        <source>The as-of date {text!r} is not a date written YYYY-MM-DD; correct it or leave it empty for the whole season.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="233"/>
        <source>DECIDED_THRESHOLD is used only with DECIDED: no decision fields are written.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/search_catalog.py" line="108"/>
        <source>The parcel layer could not be read; check INPUT.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="246"/>
        <source>Fields {fields} of the input came from an earlier run and this run does not make them: they are written empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="295"/>
        <source>Wrote {path}: {n} parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="300"/>
        <source>QGIS 3.22 cannot open a GeoParquet file; write a GeoPackage (.gpkg) or FlatGeobuf (.fgb) output to see the result in QGIS.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="309"/>
        <source>Model: {variant}, classes {classes}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="313"/>
        <source>{n} parcels, {scenes}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="325"/>
        <source>Prediction sets for {coverage:g} % coverage: mean size {mean:.2f}, {several} parcels with more than one class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="368"/>
        <source>Fields {fields} of the input are replaced by the new values.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="372"/>
        <source>Field names as stored in this format: {names}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="266"/>
        <source>Cancelled: nothing was written.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/classify_parcels.py" line="425"/>
        <source>Style saved to {qml}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/export_training_data.py" line="151"/>
        <source>The parcels have no &apos;{field}&apos; field; Train model will split them at random (give a block field for a spatial split).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/export_training_data.py" line="154"/>
        <source>The parcel layer has no field {field}; choose its block field or leave it empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/export_training_data.py" line="190"/>
        <source>The dataset folder {out} is not empty; choose a new folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/export_training_data.py" line="201"/>
        <source>{n} classes (labelled parcels with data):</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/export_training_data.py" line="205"/>
        <source>Codes not in the class map, counted as unknown: {codes}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/export_training_data.py" line="208"/>
        <source>Classes with fewer than {n} parcels, counted as unknown: {classes}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/inseason_accuracy.py" line="149"/>
        <source>{n} reference parcels, {t} acquisitions: whole-season overall accuracy {oa:.3f}, macro F1 {f1:.3f}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/inseason_accuracy.py" line="154"/>
        <source>The overall accuracy first reaches {share} % of it on {date} ({gdd:.0f} GDD)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/inseason_accuracy.py" line="159"/>
        <source>{name}: F1 first reaches {share} % of its whole-season value at {gdd:.0f} GDD</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/inseason_accuracy.py" line="162"/>
        <source>{name}: never right on the whole season (F1 0)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="111"/>
        <source>Cannot read the dates {text!r}: write them as YYYY-MM-DD, separated by commas.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="136"/>
        <source>Give either DATES or scenes, so that there are dates to compute GDD at.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="144"/>
        <source>The cap temperature must be above the base temperature.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="212"/>
        <source>{n} parcels have no usable temperatures; their GDD fields stay empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="214"/>
        <source>Wrote {path}: GDD of {n} parcels at {dates} dates from {weather}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="231"/>
        <source>GDD of {n} parcels at {dates} dates from {weather}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/parcel_gdd.py" line="236"/>
        <source>{n} parcels have no usable temperatures (no grid cell with data within {km} km, or a gap of more than 3 days); their GDD fields stay empty. Features: {features}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="49"/>
        <source>Give either the {preset} code table or the class map file {path}, not both.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="162"/>
        <source>Resuming needs the run folder of the interrupted run: give &apos;{folder}&apos; (a temporary output has no run folder beside it).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="193"/>
        <source>The partitions written so far stay in {folder}; run again with &apos;{resume}&apos; ticked to take the run up.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="226"/>
        <source>{total} partitions</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="228"/>
        <source>Resuming: {done} of {total} partitions already written</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="231"/>
        <source>Dask dashboard: {link}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/request_parts.py" line="234"/>
        <source>{total} partitions ({computed} computed now, {resumed} from the interrupted run) in {seconds} s; the partitions took {cpu} CPU s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/search_catalog.py" line="112"/>
        <source>Searching {catalog} for {n} parcels, cloud cover at most {cloud:g} %</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/search_catalog.py" line="128"/>
        <source>The search found no items; widen the period or the cloud limit, or check the catalogue and collection. Nothing was written.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="89"/>
        <source>Give at least one dataset folder (separate several with &apos;;&apos;).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="90"/>
        <source>dataset folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="102"/>
        <source>initial model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="127"/>
        <source>{out} already exists; choose a new model file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="138"/>
        <source>No CUDA GPU is available to this QGIS; choose the cpu or auto device.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="142"/>
        <source>Fine-tuning {init} with the few-label recipe (learning rate {lr:g})</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="144"/>
        <source>Training {variant} on {n} parcels, {epochs} epochs of {steps} steps, device {device}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="149"/>
        <source>Classes of the datasets: {classes}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="151"/>
        <source>Estimate: {estimate}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="153"/>
        <source>This budget takes long on the CPU; fewer epochs or steps per epoch finish sooner (the defaults take minutes).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/train_model.py" line="158"/>
        <source>Model classes ({n}): {classes}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="4"/>
        <source>Accuracy assessment</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="5"/>
        <source>Compares the classes of a classified layer with reference (ground truth) classes: confusion matrix, overall accuracy, kappa, and per class the user&apos;s accuracy (1 - commission error), the producer&apos;s accuracy (1 - omission error) and F1. With the map&apos;s class areas as strata weights it also gives area-adjusted accuracies and each class&apos;s estimated area with 95 % confidence intervals (stratified estimators of Olofsson et al. 2014, &apos;Good practices for estimating area and assessing accuracy of land change&apos;). Every feature is part of the map; the features whose reference field is filled are the sample, which should be a random sample within each map class (or of the whole map). Writes an HTML report with the matrix as a heat map and a CSV table.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="6"/>
        <source>Classified layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="7"/>
        <source>Map (predicted) class field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="8"/>
        <source>Reference class field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="9"/>
        <source>Confidence field (reliability)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="10"/>
        <source>Map class areas</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="11"/>
        <source>Table of map class areas (CSV)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="12"/>
        <source>Accuracy report</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="13"/>
        <source>Per-class table</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="14"/>
        <source>Confusion matrix table</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="15"/>
        <source>The classified layer (e.g. the output of Classify parcels), with the reference class filled on the sampled features and empty elsewhere.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="16"/>
        <source>Field holding the map&apos;s (predicted) class.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="17"/>
        <source>Field holding the reference (ground truth) class, with the same class names as the map; empty where a feature was not checked.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="18"/>
        <source>Optional field of the map&apos;s confidence (crop_conf): the report then shows how often the reference units of each confidence are right (a reliability diagram, 10 bins) and the expected calibration error.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="19"/>
        <source>Where the map&apos;s class areas (strata weights) come from when no class-area table is given: the summed ellipsoidal area of the layer&apos;s features per predicted class (hectares; polygons only), their number, or no weighting (scores of the reference sample only).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="20"/>
        <source>Optional CSV table of the map&apos;s class areas (header, then one row per class: class name, area in any unit, e.g. of a larger map the layer samples). Overrides WEIGHTING.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="21"/>
        <source>The report: summary, confusion matrix as a heat map, per-class and area-adjusted tables (one self-contained file).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="22"/>
        <source>Per-class table: counts, user&apos;s / producer&apos;s accuracy, F1, and the area-adjusted figures with the half-widths of their 95 % intervals; a last row &apos;overall&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="23"/>
        <source>Optional CSV of the confusion matrix (rows map, columns reference).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="24"/>
        <source>Overall accuracy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="25"/>
        <source>Kappa</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="26"/>
        <source>Area-adjusted overall accuracy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="27"/>
        <source>Reference units</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="28"/>
        <source>Expected calibration error</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="29"/>
        <source>Calibrate model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="30"/>
        <source>Makes a model&apos;s confidence a probability on your own fields: classifies the labelled reference parcels from the scenes and weather, fits the calibration (a temperature for the probabilities and the scores of the prediction sets) on the parcels whose label is one of the model&apos;s classes, and writes the model with it as a new bundle. Use parcels the model was not trained on, at least 50 of them and some of every class; the log gives the calibration error before and after.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="31"/>
        <source>Reference parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="33"/>
        <source>Crop code table (class map preset)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="34"/>
        <source>Class map file (CSV or YAML)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="35"/>
        <source>Sentinel-2 scenes (these, a folder of scenes or saved STAC items)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="36"/>
        <source>Folder of scenes (or the scenes above)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="37"/>
        <source>Saved STAC items (instead of scene files)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="38"/>
        <source>Catalogue credentials (authentication configuration)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="39"/>
        <source>Daily temperature file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="40"/>
        <source>Temperatures from</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="41"/>
        <source>Model bundle to calibrate</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="42"/>
        <source>Calibration method</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="43"/>
        <source>GDD floor (empty: the model&apos;s own)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="44"/>
        <source>Calibrated model bundle</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="45"/>
        <source>Reference parcel polygons with a crop label field (only the selected ones, if any are selected and the layer is chosen with &apos;Selected features only&apos;).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="46"/>
        <source>Field holding each parcel&apos;s true class: the model&apos;s class names, or crop codes with a class map. Parcels with an empty value are left out.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="47"/>
        <source>Map national crop codes to classes with the table of the paper&apos;s data for France, Denmark or Austria; codes not in the table become &apos;unknown&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="48"/>
        <source>Or your own class map: a CSV with columns code,class (or a YAML file). Give either this or a preset, not both.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="49"/>
        <source>Sentinel-2 scenes of one season: multi-band GeoTIFFs, per-band files or .SAFE products, as layers or files (repeat SCENES=... on the command line). Give these, a scene folder, or both, or else saved STAC items: one of them is required.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="50"/>
        <source>A folder holding the scenes, instead of or besides the scenes above: one of the two (or saved STAC items) is required.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="51"/>
        <source>A STAC item collection saved by &apos;Search a catalogue&apos; (or &apos;thermocrop scenes search&apos;), instead of scene files: only the parts of its images that hold parcels are fetched, and kept in the cache ($THERMOCROP_CACHE or ~/.cache/thermocrop), so a second run reads nothing over the network.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="52"/>
        <source>Credentials for the saved items&apos; images, from QGIS&apos;s authentication manager (a Basic configuration): for the Copernicus Data Space the S3 access key as user name and the secret key as password; for Planetary Computer a subscription key as password (optional). Empty: the environment&apos;s AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / PC_SDK_SUBSCRIPTION_KEY, if set. Never stored in the project.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="53"/>
        <source>Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV; or leave it empty and choose a weather service below.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="54"/>
        <source>Where the daily temperatures come from: the file above, or a weather service fetched for the parcels&apos; 0.1-degree cells and kept as a NetCDF in the cache (Open-Meteo needs no key; the Copernicus CDS needs CDSAPI_URL / CDSAPI_KEY in the environment).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="55"/>
        <source>Model bundle (.tcm) to calibrate. Leave empty for the model shipped with the plugin.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="56"/>
        <source>Temperature scaling divides the log-probabilities by one number and keeps every label. Vector scaling adds one bias per class, fitted with a penalty chosen by cross-validation on the reference parcels, for the whole season and for each stage of it: it corrects how often the model names each class on your fields and can change labels, most early in the season. On the real Bavarian parcels it gave the lower calibration error, and as of late May and June 7 to 15 points more accuracy on the other half (docs/calibration.md).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="57"/>
        <source>Give the calibrated model this GDD floor: each parcel&apos;s acquisitions before it (growing degree days since the season start) are left out of its classification where it has one from then on, and the calibration is fitted so. 0: none. Leave it empty to keep the model&apos;s own (550 for the shipped L1C model, chosen on real Bavarian parcels whose winter scenes misled it; docs/in-season.md).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="58"/>
        <source>The calibrated model bundle (.tcm) to write; the model&apos;s weights are those of the input model.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="59"/>
        <source>Temperature</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="60"/>
        <source>Reference parcels used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="61"/>
        <source>Classify parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="62"/>
        <source>Predicts the crop type of every parcel from a Sentinel-2 time series and daily temperatures with a ThermoCrop model (PSE+LTAE with thermal positional encoding). The output keeps every feature and attribute of the input and adds the predicted class, its probability and a status saying why a parcel could not be classified.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="63"/>
        <source>Parcel layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="64"/>
        <source>Model bundle</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="68"/>
        <source>Class probabilities, margin and entropy fields</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="69"/>
        <source>Prediction sets (crop_set, crop_set_size)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="70"/>
        <source>Prediction set coverage</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="71"/>
        <source>As of date (YYYY-MM-DD; empty: the whole season)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="72"/>
        <source>When each label was decided (crop_decided)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="73"/>
        <source>Confidence a decided label keeps</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="74"/>
        <source>Class shares of the area (CSV)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="75"/>
        <source>Parcels per partition</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="76"/>
        <source>Local worker processes (Dask; 1: this process)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="77"/>
        <source>Dask scheduler address (tcp://HOST:PORT)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="78"/>
        <source>Run folder (the partitions, kept to resume)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="79"/>
        <source>Resume the interrupted run in the run folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="80"/>
        <source>Classified parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="81"/>
        <source>Parcel polygons, any CRS. Every feature is classified. Or a GeoParquet file (.parquet) given by its path, which QGIS 3.22 cannot open: ThermoCrop reads it by row groups and writes the output itself (a temporary output becomes a GeoPackage).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="82"/>
        <source>Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV (date,tmin,tmax) covering the season; or leave it empty and choose a weather service below.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="83"/>
        <source>Model bundle (.tcm). Leave empty for the model shipped for the scenes&apos; processing level: default_fast_l2a.tcm for L2A scenes (every catalogue&apos;s), default_fast.tcm for L1C or mixed ones; as of a date whose last scene kept has fewer than 2,000 GDD (about mid-July in central Europe), on L1C scenes, the in-season model inseason.tcm. The ensembles they were distilled from, default_l2a.tcm and default.tcm, are beside them in resources/models.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="84"/>
        <source>Name of the output field with the predicted class.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="85"/>
        <source>Name of the output field with the predicted class&apos;s probability (0-1).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="86"/>
        <source>Name of the output field saying &apos;ok&apos; or why a parcel was not classified.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="87"/>
        <source>Also write each class&apos;s probability (p_&lt;class&gt;), the margin between the two likeliest classes (crop_margin) and the normalised entropy of the probabilities (crop_entropy, 0 sure .. 1 undecided).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="88"/>
        <source>Write each parcel&apos;s prediction set: the classes that hold its true class with the chosen coverage (crop_set, most probable first, joined by |) and how many they are (crop_set_size; 1 means the label is sure at that coverage). Needs a calibrated model.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="89"/>
        <source>The chance that a parcel&apos;s prediction set holds its true class (0.9: nine parcels in ten); a higher coverage gives larger sets.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="90"/>
        <source>Classify as of this date (YYYY-MM-DD): scenes acquired after it are left out and the season&apos;s status on it (acquisitions, GDD) is logged. Empty: the whole season.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="91"/>
        <source>Also write crop_decided (the acquisition from which the label no longer changes and keeps the confidence below, as YYYY-MM-DD text) and crop_decided_gdd (the parcel&apos;s GDD then).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="92"/>
        <source>The confidence (calibrated where the model carries a calibration) a decided label keeps up to the last acquisition, from 0 to 1. Used with DECIDED.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="93"/>
        <source>Optional: the crops&apos; shares of the parcels in the area, known from elsewhere (last year&apos;s declarations, agricultural statistics), as a CSV file &apos;class,share&apos; by the model&apos;s class names. The probabilities are brought to these shares before labels and sets are made, which helps most early in the season (decision dates follow each date&apos;s map so adjusted). Not with a partitioned run.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="94"/>
        <source>Parcels read and processed together: the size of a partition in a partitioned run (a partition never spans two Sentinel-2 tiles), and of what is held in memory at once in one process.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="95"/>
        <source>Worker processes of a Dask cluster started on this computer for the run (one thread each), which work on the partitions side by side; 1: the run stays in this process. Needs dask.distributed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="96"/>
        <source>Run the partitions on a Dask cluster started apart (dask-jobqueue on SLURM, Kubernetes, &apos;dask scheduler&apos; and &apos;dask worker&apos;): the scheduler&apos;s address, tcp://HOST:PORT or HOST:PORT. The run folder, the scenes, the weather file and the model must be at the same paths on every worker. Leave the local worker processes at 1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="97"/>
        <source>Where the partitions of a partitioned run are written as they finish; it is removed once the output is written. Empty: beside the output (its name + .parts), or a temporary folder for a temporary output. Giving one runs the partitions even in this process, so that the run can be resumed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="98"/>
        <source>Take up a cancelled or interrupted run from the partitions its run folder holds: only the missing ones are computed. The inputs and settings must be those of the interrupted run.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="99"/>
        <source>Classified parcels, styled by class; the style is saved beside file outputs.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="100"/>
        <source>Parcels classified</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="101"/>
        <source>Export training data</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="102"/>
        <source>Samples up to MAX_PIXELS pixels of every labelled parcel on every scene date, with cloud masks and growing degree days, and writes them as a ThermoCrop dataset folder that Train model reads. The dataset&apos;s classes are the labels found, or the classes a class map gives the crop codes.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="104"/>
        <source>Block field (spatial split)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="105"/>
        <source>Minimum parcels per class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="106"/>
        <source>Season start</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="107"/>
        <source>Pixels per parcel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="108"/>
        <source>Dataset folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="109"/>
        <source>Parcel polygons with a crop label field. Or a GeoParquet file (.parquet) given by its path, which QGIS 3.22 cannot open: ThermoCrop reads it by row groups (parcels named by its parcel_id field, as on the command line).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="110"/>
        <source>Field holding each parcel&apos;s crop label: any class names or crop codes. Parcels with an empty value are left unlabelled.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="111"/>
        <source>Field of each parcel&apos;s spatial block (e.g. a 10 km grid cell id): Train model splits training, validation and test by block, so that neighbouring parcels do not score each other. Default: the field &apos;block&apos; when the layer has one; empty: no blocks (Train model then splits at random and warns).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="112"/>
        <source>Or your own class map: a CSV with columns code,class (or a YAML file). Codes not in it become &apos;unknown&apos;. Give either this or a preset, not both.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="113"/>
        <source>Classes with fewer labelled parcels become &apos;unknown&apos; (0: keep every class).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="114"/>
        <source>Season start as MM-DD, or MM-DD/-1 for the previous year.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="115"/>
        <source>Pixels sampled per parcel and date (the paper uses 64).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="116"/>
        <source>Dataset folder to create; it must not exist yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="117"/>
        <source>In-season accuracy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="118"/>
        <source>How early in the season the model can be trusted on your own fields: classifies the labelled reference parcels from the scenes and weather as of each acquisition, and writes the overall accuracy, macro F1 and each class&apos;s F1 against the date and the growing degree days (inseason.csv), for each class the GDD at which its F1 first reaches 90 % of its whole-season value (inseason_classes.csv), and a figure of both (inseason.png). Parcels of classes the model does not know are left out and counted in the log.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="119"/>
        <source>Output folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="120"/>
        <source>Model bundle (.tcm) to score. Leave empty for the model shipped with the plugin for the scenes&apos; processing level.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="121"/>
        <source>Folder for inseason.csv, inseason_classes.csv and inseason.png; the files of an earlier run there are replaced.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="122"/>
        <source>Accuracy as of each acquisition (inseason.csv)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="123"/>
        <source>GDD at which each class is recognised (inseason_classes.csv)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="124"/>
        <source>Figure (inseason.png)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="125"/>
        <source>Whole-season overall accuracy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="126"/>
        <source>Reference parcels scored</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="127"/>
        <source>Growing degree days per parcel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="128"/>
        <source>Accumulates growing degree days (GDD) from the season start at each parcel&apos;s centroid, from daily temperatures, and adds one field per date.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="129"/>
        <source>Dates</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="130"/>
        <source>Scenes (for their dates)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="131"/>
        <source>Folder of scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="132"/>
        <source>Base temperature</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="133"/>
        <source>Cap temperature</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="134"/>
        <source>Method</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="135"/>
        <source>Largest distance to a weather cell (km)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="136"/>
        <source>Parcels with GDD</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="137"/>
        <source>Parcel polygons, any CRS. Or a GeoParquet file (.parquet) given by its path, which QGIS 3.22 cannot open: ThermoCrop reads it by row groups and writes the output itself (a temporary output becomes a GeoPackage).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="138"/>
        <source>Dates as YYYY-MM-DD separated by commas. Leave empty to use the scene dates.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="139"/>
        <source>Sentinel-2 scenes whose acquisition dates are used when DATES is empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="140"/>
        <source>A folder of scenes whose dates are used when DATES is empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="141"/>
        <source>Or a STAC item collection saved by &apos;Search a catalogue&apos;, whose dates are used when DATES is empty (no image is read).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="142"/>
        <source>Season start as MM-DD, or MM-DD/-1 for the previous year (e.g. 09-01/-1).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="143"/>
        <source>Base temperature (°C) below which no growth is counted.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="144"/>
        <source>Cap temperature (°C) above which no extra growth is counted.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="145"/>
        <source>paper: clip daily min/max then average; average: average then clip at the base.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="146"/>
        <source>How far a parcel may be from the grid cell (or station) it takes its temperatures from; farther parcels get no GDD.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="147"/>
        <source>The parcels with one field gdd_YYYYMMDD per date.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="149"/>
        <source>Finds the Sentinel-2 L2A items of a STAC catalogue that cover the parcel layer in a season, keeps those with at most the given cloud cover, logs their dates, tiles and cloud cover and saves them as a STAC ItemCollection (.json). Classify parcels, Export training data and Growing degree days per parcel read the saved file as their scenes, fetching only the parts of the images that hold parcels.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="151"/>
        <source>STAC API URL (for another STAC API)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="152"/>
        <source>Collection</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="153"/>
        <source>Season (year)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="154"/>
        <source>Start (YYYY-MM-DD)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="155"/>
        <source>End (YYYY-MM-DD)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="156"/>
        <source>Largest cloud cover (%)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="157"/>
        <source>Item collection</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="158"/>
        <source>Parcel polygons, any CRS: the search covers their bounding box.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="159"/>
        <source>Earth Search (public COGs on AWS), Planetary Computer (signed by ThermoCrop), the Copernicus Data Space (JPEG 2000 in S3: reading needs S3 keys) or another STAC API given by its URL.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="160"/>
        <source>The address of the STAC API when &apos;Another STAC API&apos; is chosen, e.g. https://stac.example.org/v1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="161"/>
        <source>Collection id; empty for the catalogue&apos;s Sentinel-2 L2A collection (sentinel-2-l2a).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="162"/>
        <source>Calendar year searched (1 January to 31 December); Start and End narrow or replace it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="163"/>
        <source>First day searched, YYYY-MM-DD (optional).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="164"/>
        <source>Last day searched, YYYY-MM-DD (optional).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="165"/>
        <source>Largest cloud cover of an item (eo:cloud_cover), percent.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="166"/>
        <source>The item collection to write (.json); it appears only once complete.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="167"/>
        <source>Items found</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="168"/>
        <source>Dates found</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="169"/>
        <source>Train model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="170"/>
        <source>Trains a PSE+LTAE classifier with the chosen positional encoding on one or more datasets written by Export training data, and saves a model bundle (.tcm) that Classify parcels and the dock can use.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="171"/>
        <source>Dataset folders</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="172"/>
        <source>Model variant</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="173"/>
        <source>Epochs</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="174"/>
        <source>Steps per epoch</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="175"/>
        <source>Batch size</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="176"/>
        <source>Device</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="177"/>
        <source>Classes (empty: all classes of the datasets)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="178"/>
        <source>Initial model (empty: from random weights)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="179"/>
        <source>Dataset folders, separated by ';' (from Export training data); '…' adds one with a folder dialog.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="180"/>
        <source>Positional encoding: thermal (tpe_*), calendar days, ShiftAug or none. tpe_sinusoidal, the shipped model&apos;s, is recommended (docs/training.md). With an initial model its variant holds: the default stands for it, another choice than the model&apos;s is refused.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="181"/>
        <source>Training epochs (default 30, the shipped model&apos;s; the paper trains 100). The time the run will take is measured and logged before it starts.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="182"/>
        <source>Optimiser steps per epoch (default 25; the paper uses 500).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="183"/>
        <source>Parcels per optimiser step (default 64; the paper uses 128).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="184"/>
        <source>auto uses a CUDA GPU when there is one, else the CPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="185"/>
        <source>The model&apos;s classes, separated by commas (e.g. corn,meadow,winter_wheat,unknown). Empty: every class of the datasets. Parcels of other classes are left out of training.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="186"/>
        <source>A model bundle (.tcm) to start from (fine-tuning), e.g. the shipped model. Its variant, settings, bands, input scaling and GDD settings are kept, its classes too when the datasets&apos; classes are among them (else a new output layer learns the new list), and it trains with the few-label recipe (docs/training.md). Empty: from random weights.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="187"/>
        <source>Model bundle file (.tcm) to write.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
